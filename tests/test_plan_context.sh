#!/usr/bin/env bash
# plan --auto and context parallelism: the table has a cp column and the best
# --set list the key; without a limit every plan keeps cp 1 (cp is tried only
# where memory binds); under a runtime.device_memory just below what every
# cp 1 layout needs without sharding or recomputation, on a long sequence
# whose activations dominate, cp > 1 layouts fit and the fastest of them
# trains; a configuration with cp > 1 plans; a calibration that times no ring
# kind leaves the cp > 1 layouts out with one line instead of failing.
. "${ND_SRCDIR:-.}/tests/tap.sh"

# the quick start on 2 CPU workers at seq_len 512: a layer's activations of 16
# sequences outweigh the weights and their AdamW state several times
base=(--set runtime.workers=2 --set model.seq_len=512)

"$ndgraph" plan --auto "${base[@]}" --json >"$tmp/free.json" 2>"$tmp/err"
ok $? "plan --auto at seq_len 512 without a limit ($(head -c 200 "$tmp/err"))"
# the limit in MiB just under the least a cp 1 layout without sharding or recomputation needs
python3 - "$tmp/free.json" >"$tmp/limit" 2>"$tmp/err" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sets = [dict(s.split("=", 1) for s in p["set"]) for p in d["plans"]]
assert all(s["parallelism.context_parallel_size"] == "1" for s in sets), "cp > 1 where every layout fits"
need = min(p["rank_memory_bytes"] for p, s in zip(d["plans"], sets)
           if s["train.recompute"] == "none" and s["parallelism.data_parallel_shard"] == "none")
print((int(need) - 1) >> 20)
PY
ok $? "no limit: every plan has cp 1 in its --set list ($(tail -n 1 "$tmp/err"))"
limit=$(cat "$tmp/limit")
diag "limit: $limit MiB a rank"

"$ndgraph" plan --auto "${base[@]}" >"$tmp/free.txt" 2>&1
grep -q '^ #  step ms .* dp cp tp pp ' "$tmp/free.txt" &&
  grep -q '^best: .*--set parallelism.context_parallel_size=1' "$tmp/free.txt"
ok $? "the table has a cp column and the best --set list parallelism.context_parallel_size"

lim=(--set runtime.device_memory="$limit")
"$ndgraph" plan --auto "${base[@]}" "${lim[@]}" --json >"$tmp/lim.json" 2>"$tmp/err"
ok $? "plan --auto with runtime.device_memory=$limit ($(head -c 200 "$tmp/err"))"
python3 - "$tmp/lim.json" "$limit" >"$tmp/cp_sets" 2>"$tmp/err" <<'PY'
import json, sys
d, limit = json.load(open(sys.argv[1])), int(sys.argv[2]) << 20
cp = [p for p in d["plans"] if "parallelism.context_parallel_size=1" not in p["set"]]
assert cp, "no cp > 1 layout among the %d that fit" % len(d["plans"])
assert all(p["rank_memory_bytes"] <= limit for p in cp), "a cp > 1 plan over the limit"
print(" ".join("--set %s" % s for s in cp[0]["set"]))
PY
ok $? "under the limit, cp > 1 layouts fit ($(tail -n 1 "$tmp/err"))"
diag "the fastest of them: $(cat "$tmp/cp_sets")"

# shellcheck disable=SC2086 # the --set list splits on spaces
"$ndgraph" run "${base[@]}" "${lim[@]}" $(cat "$tmp/cp_sets") --set train.steps=2 --set train.eval_every=0 \
  --set train.save_dir= >"$tmp/run.txt" 2>&1
ok $? "that layout trains 2 steps ($(tail -n 2 "$tmp/run.txt" | head -c 300))"
grep -q ' x context [0-9]' "$tmp/run.txt"
ok $? "the run names its context split"

"$ndgraph" plan --auto "${base[@]}" --set parallelism.context_parallel_size=2 >/dev/null 2>"$tmp/err"
ok $? "a configuration with cp 2 plans ($(head -c 200 "$tmp/err"))"

# configs/calibration-8gpu.json times no ring kind (ndgraph calibrate probes no ring)
gpu=(--calibration "$srcdir/configs/calibration-8gpu.json" --set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml")
"$ndgraph" plan --auto "${gpu[@]}" "${base[@]}" "${lim[@]}" >"$tmp/gpu.txt" 2>"$tmp/err"
ok $? "a calibration without ring kinds still plans under the limit ($(head -c 200 "$tmp/err"))"
grep -Eq '^[0-9]+ sharded, recomputed or context-parallel layouts not simulated: the calibration does not time ring_' \
  "$tmp/gpu.txt" && ! grep -q -- '--set parallelism.context_parallel_size=[2-9]' "$tmp/gpu.txt"
ok $? "it says the cp > 1 layouts were left out, and picks none ($(grep 'not simulated' "$tmp/gpu.txt"))"

done_testing
