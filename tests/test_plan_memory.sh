#!/usr/bin/env bash
# plan --auto under a memory limit (runtime.device_memory): with none it
# keeps the fastest layout and recomputes nothing; with a limit below what
# every layout needs without sharding or recomputation (computed here from
# the plans' figures, checked against `ndgraph plan`'s memory per rank) it
# picks a sharded or recomputed layout that fits, and that layout trains
# with the measured tensors of every rank under the limit, as does a run
# with parallelism.auto. Limits nothing
# fits, bad values and a calibration that cannot time the shard kinds are
# one line or a note, not a crash.
. "${ND_SRCDIR:-.}/tests/tap.sh"

# the quick start on 2 CPU workers, whatever this machine has
base=(--set runtime.workers=2)

"$ndgraph" plan --auto "${base[@]}" --json >"$tmp/free.json" 2>"$tmp/err"
ok $? "plan --auto without a limit ($(head -c 200 "$tmp/err"))"
# prints the limit in MiB, just under the least that a layout without
# sharding or recomputation needs on its fullest rank, then that layout's --set list
python3 - "$tmp/free.json" >"$tmp/need" 2>"$tmp/err" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sets = [dict(s.split("=", 1) for s in p["set"]) for p in d["plans"]]
plain = lambda s: s["train.recompute"] == "none" and s["parallelism.data_parallel_shard"] == "none"
assert plain(sets[0]), "the fastest is not none/none: %s" % sets[0]
assert all(s["train.recompute"] == "none" for s in sets), "recomputed layouts where every layout fits"
least = min((p for p, s in zip(d["plans"], sets) if plain(s)), key=lambda p: p["rank_memory_bytes"])
need = least["rank_memory_bytes"]
print((int(need) - 1) >> 20)
print(int(need))
print(" ".join("--set %s" % s for s in least["set"]))
PY
ok $? "no limit: the best is none/none and nothing is recomputed ($(tail -n 1 "$tmp/err"))"
limit=$(sed -n 1p "$tmp/need") need=$(sed -n 2p "$tmp/need") least_sets=$(sed -n 3p "$tmp/need")
diag "every layout without sharding or recomputation needs at least $need bytes a rank; limit: $limit MiB"

# the planner's figure for that layout is `ndgraph plan`'s: the fullest rank's sum of the memory table
# (which leaves out the step's statistics, a few scalars)
# shellcheck disable=SC2086 # the --set list splits on spaces
"$ndgraph" plan "${base[@]}" $least_sets --json >"$tmp/least.json" 2>"$tmp/err" &&
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
kinds = ("param_bytes", "param_copy_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes", "input_bytes",
         "transient_bytes")
most = max(sum(r[k] for k in kinds) for r in d["ranks"])
sys.exit(0 if 0 <= int(sys.argv[2]) - most <= 64 else "plan: %d, plan --auto: %s" % (most, sys.argv[2]))' "$tmp/least.json" "$need" 2>>"$tmp/err"
ok $? "that need is ndgraph plan's memory per rank for the layout ($(tail -c 200 "$tmp/err"))"

"$ndgraph" plan --auto "${base[@]}" >"$tmp/free.txt" 2>&1
grep -q ' recompute shard  *rank MiB ' "$tmp/free.txt" &&
  grep -q '^best: .*--set runtime.scheduler=[a-z0-9]* --set train.recompute=none --set parallelism.data_parallel_shard=none' "$tmp/free.txt"
ok $? "the table has recompute, shard and rank memory columns, and the best --set list the keys"

lim=(--set runtime.device_memory="$limit")
"$ndgraph" plan --auto "${base[@]}" "${lim[@]}" --json >"$tmp/lim.json" 2>"$tmp/err"
ok $? "plan --auto with runtime.device_memory=$limit ($(head -c 200 "$tmp/err"))"
python3 - "$tmp/lim.json" "$limit" >"$tmp/best" 2>"$tmp/err" <<'PY'
import json, sys
d, limit = json.load(open(sys.argv[1])), int(sys.argv[2]) << 20
sets = [dict(s.split("=", 1) for s in p["set"]) for p in d["plans"]]
options = lambda s: (s["train.recompute"], s["parallelism.data_parallel_shard"])
assert d["plans"], "no plan"
assert d["rank_memory_limit_bytes"] == limit
assert all(p["rank_memory_bytes"] <= limit for p in d["plans"]), "a plan over the limit"
assert all(options(s) != ("none", "none") for s in sets), "a none/none plan under a limit none fits"
assert options(sets[0]) != ("none", "none")
plain = [r for r in d["rejected"] if "train.recompute=none" in r["set"] and "parallelism.data_parallel_shard=none" in r["set"]]
assert plain and all("runtime.device_memory" in r["reason"] for r in plain), "none/none layouts not rejected for the limit"
print(int(d["plans"][0]["rank_memory_bytes"]), " ".join("--set %s" % s for s in d["plans"][0]["set"]))
PY
ok $? "every plan fits the limit, none without sharding or recomputation; the best: $(cut -c1-400 "$tmp/best") $(tail -n 1 "$tmp/err")"
read -r planned best_sets <"$tmp/best"

"$ndgraph" plan --auto "${base[@]}" "${lim[@]}" >"$tmp/lim.txt" 2>&1
grep -qE "recompute none, shard none, .*: rank dp [0-9]+ pp [0-9]+ tp [0-9]+ needs [0-9.]+ GiB \([0-9]+ bytes\), runtime.device_memory is [0-9.]+ GiB \($((limit << 20)) bytes\)" "$tmp/lim.txt"
ok $? "the text output names the rank, what it needs and the limit"

# the best layout trains, every rank's measured tensors under the limit
# shellcheck disable=SC2086
[ -n "$best_sets" ] && "$ndgraph" run "${base[@]}" $best_sets --set train.steps=3 --set log.every=1 --set train.eval_every=0 \
  --metrics "$tmp/m.jsonl" >"$tmp/run.out" 2>&1
st=$?
[ $st -eq 0 ] || sed 's/^/# /' "$tmp/run.out" | tail -3
ok $st "the best layout under the limit trains 3 steps"
python3 - "$tmp/m.jsonl" "$limit" "$planned" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
limit, planned = int(sys.argv[2]) << 20, int(sys.argv[3])
peak = max(l["rank_tensor_bytes_peak"] for l in lines)
print("# measured %d bytes on the fullest rank, planned %d, limit %d" % (peak, planned, limit))
assert len(lines) == 3 and planned <= peak <= limit, "measured over the limit or under the plan"
assert peak <= planned * 1.02, "measured more than 2% over the plan"
PY
ok $? "its measured tensors per rank are under the limit and within 2% of the plan"

# parallelism.auto plans under the limit too, and trains that layout
"$ndgraph" run "${base[@]}" "${lim[@]}" --set parallelism.auto=true --set train.steps=2 --set log.every=1 \
  --set train.eval_every=0 --metrics "$tmp/auto.jsonl" >"$tmp/auto.out" 2>&1 &&
  grep -q "^parallelism.auto: .*using .*train.recompute=" "$tmp/auto.out" &&
  ! grep -q "using .*train.recompute=none parallelism.data_parallel_shard=none" "$tmp/auto.out" &&
  python3 -c '
import json, sys
sys.exit(max(json.loads(l)["rank_tensor_bytes_peak"] for l in open(sys.argv[1]) if "\"loss\"" in l) > int(sys.argv[2]) << 20)' \
    "$tmp/auto.jsonl" "$limit"
ok $? "run with parallelism.auto under the limit trains a sharded or recomputed layout within it ($(grep -o 'using.*' "$tmp/auto.out" | cut -c1-300))"

expect 2 "no layout fits.*runtime.device_memory is 0.001 GiB" "a limit that nothing fits: one line naming it, exit 2" \
  -- "$ndgraph" plan --auto "${base[@]}" --set runtime.device_memory=1
expect 2 "runtime.device_memory: -1 is out of range" "a negative limit: one line, exit 2" \
  -- "$ndgraph" plan --auto "${base[@]}" --set runtime.device_memory=-1

# GPUs: the limit caps each device; a calibration that times no reduce-scatter
# (ndgraph calibrate probes no sharded group) still plans, and says what it left out
gpu=(--set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" --set runtime.device_memory=8)
python3 - "$srcdir/configs/calibration-8gpu.json" "$tmp/no-rs.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["kinds"]["reduce_scatter"]
json.dump(d, open(sys.argv[2], "w"))
PY
"$ndgraph" plan --auto "${gpu[@]}" --calibration "$srcdir/configs/calibration-8gpu.json" --json >"$tmp/gpu.json" 2>"$tmp/err"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["plans"]  # untimed_layouts: the context-parallel ones (the file times no ring kind)
assert all(v <= 8 << 20 for p in d["plans"] for k, v in p["peak_memory_bytes"].items() if k != "host")
assert any("gradients" in " ".join(p["set"]) for p in d["plans"]), "no sharded plan"' "$tmp/gpu.json"
ok $? "8 GPUs limited to 8 MiB: every plan fits each GPU, sharded layouts among them ($(head -c 200 "$tmp/err"))"
"$ndgraph" plan --auto "${gpu[@]}" --calibration "$tmp/no-rs.json" >"$tmp/no-rs.txt" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && grep -qE '^[0-9]+ sharded, recomputed or context-parallel layouts not simulated: the calibration does not time (reduce_scatter|ring_[a-z_]+)$' "$tmp/no-rs.txt"
ok $? "a calibration without reduce_scatter: planned all the same, the layouts left out said (exit $st, $(head -c 200 "$tmp/err"))"

done_testing
