#!/usr/bin/env bash
# plan --auto: a ranked plan for the 8-GPU topology with the hand-written GPU
# calibration, plans that are --set arguments as they are, memory rejections
# that name the device and the numbers, and a malformed calibration file as
# one line and exit 2; a model of a thousand layers planned in seconds.
. "${ND_SRCDIR:-.}/tests/tap.sh"

gpu=(--set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" --calibration "$srcdir/configs/calibration-8gpu.json")
"$ndgraph" plan --auto "${gpu[@]}" --json >"$tmp/gpu.json" 2>"$tmp/err"
ok $? "plan --auto on the 8-GPU topology with configs/calibration-8gpu.json succeeds"
python3 - "$tmp/gpu.json" >"$tmp/check" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["plans"]
t = [x["predicted_step_ms"] for x in p]
assert len(p) >= 10, "fewer than ten plans"
assert t == sorted(t) and t[0] > 0, "not ranked by predicted step time"
assert all(len(x["peak_memory_bytes"]) == 9 for x in p), "peak memory not per device (host + 8 GPUs)"
assert all(x["set"] for x in p)
print(" ".join("--set '%s'" % s for s in p[0]["set"]))
PY
ok $? "it ranks $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["plans"]))' "$tmp/gpu.json" 2>/dev/null) plans by predicted step time, memory per device"
eval "set -- $(cat "$tmp/check")"
"$ndgraph" plan --set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" "$@" >/dev/null 2>"$tmp/err"
ok $? "the best plan's \"set\" strings are --set arguments as they are ($(head -1 "$tmp/err"))"

# a file written before crossentropy_lse was a kind of its own: that kind
# takes crossentropy_combine's entry, and the plans are the same
python3 - "$srcdir/configs/calibration-8gpu.json" "$tmp/before-lse.json" "$tmp/old.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["kinds"]["crossentropy_lse"] = d["kinds"]["crossentropy_combine"]
json.dump(d, open(sys.argv[2], "w"))
del d["kinds"]["crossentropy_lse"]
json.dump(d, open(sys.argv[3], "w"))
PY
"$ndgraph" plan --auto --set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" --calibration "$tmp/before-lse.json" --json >"$tmp/with-lse.json" 2>"$tmp/err" &&
  "$ndgraph" plan --auto --set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" --calibration "$tmp/old.json" --json >"$tmp/old-plans.json" 2>>"$tmp/err" &&
  cmp -s <(grep -v seconds "$tmp/with-lse.json") <(grep -v seconds "$tmp/old-plans.json")
ok $? "a calibration file without crossentropy_lse plans as with combine's entry for it ($(head -c 200 "$tmp/err"))"

"$ndgraph" plan --auto "${gpu[@]}" >"$tmp/gpu.txt"
grep -q '^ 1 ' "$tmp/gpu.txt" && grep -q '^10 ' "$tmp/gpu.txt" && grep -q '^best: --set' "$tmp/gpu.txt"
ok $? "the text output shows the best ten and the best plan's --set arguments"

# GPUs of 40 MiB: the layouts that need more are rejected, with the numbers
sed 's/"memory_bytes": *[0-9]*/"memory_bytes": 41943040/' "$srcdir/configs/calibration-8gpu.json" >"$tmp/small.json"
small=(--set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" --calibration "$tmp/small.json")
"$ndgraph" plan --auto "${small[@]}" >"$tmp/small.txt" 2>"$tmp/err"
grep -qE 'device cuda[0-7] needs [0-9.]+ GiB \([0-9]+ bytes\), has 0\.039 GiB \(41943040 bytes\)' "$tmp/small.txt"
ok $? "a layout over a device's memory is rejected naming the device and both numbers"
"$ndgraph" plan --auto "${small[@]}" --json >"$tmp/small.json.out" 2>"$tmp/err"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["plans"] and d["rejected"]
assert all(v <= 41943040 for p in d["plans"] for k, v in p["peak_memory_bytes"].items() if k != "host")
assert all("needs" in r["reason"] for r in d["rejected"])' "$tmp/small.json.out"
ok $? "every plan left fits 40 MiB on each GPU; every rejected one says what it needs"

printf '{"format": "ndgraph-calibration/1", "kinds": {"matmul_fwd": {"cpu": {"gflops": -3}}}}' >"$tmp/neg.json"
printf '{"format": "ndgraph-calibration/1", "kinds": {"matmul_fwd": {"cpu": {"gflops": 1e999}}}}' >"$tmp/inf.json"
printf '{"format": "ndgraph-calibration/1", "kinds": {"matmul_fast": {"cpu": {}}}}' >"$tmp/kind.json"
printf '{"format": "ndgraph-calibration/1", "kinds": ' >"$tmp/cut.json"
printf '{"format": "ndgraph-calibration/1", "step_overhead_us": 1e300, "kinds": {"matmul_fwd": {"cpu": {}}}}' \
  >"$tmp/huge.json"
mkfifo "$tmp/fifo.json" # never written: reading it must not wait
for f in neg inf kind cut missing fifo huge; do
  timeout 60 "$ndgraph" plan --auto --calibration "$tmp/$f.json" >/dev/null 2>"$tmp/err"
  st=$?
  [ "$st" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$tmp/$f.json: " "$tmp/err"
  ok $? "malformed calibration ($f): exit 2 ($st), one line naming the file: $(cat "$tmp/err")"
done
grep -q 'kinds.matmul_fwd.cpu.gflops must be a non-negative number' <("$ndgraph" plan --auto --calibration "$tmp/neg.json" 2>&1)
ok $? "the line names the member and the problem"
grep -q '(top level).step_overhead_us must be at most 3.6e+09' <("$ndgraph" plan --auto --calibration "$tmp/huge.json" 2>&1)
ok $? "a duration beyond an hour is refused, not printed as a step of 1e300 us"
# a file that times a kind on no worker of the machine: no layout can run the model
python3 - "$srcdir/configs/calibration-8gpu.json" >"$tmp/untimed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["kinds"]["adamw"] = {}
print(json.dumps(d))
PY
"$ndgraph" plan --auto --calibration "$tmp/untimed.json" --set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" \
  >/dev/null 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && [ "$(cat "$tmp/err")" = "ndgraph: $tmp/untimed.json: kinds.adamw: no timing for this machine's workers (cuda): no layout can run it" ]
ok $? "a kind the calibration times on no worker is named, exit 2 ($st): $(cat "$tmp/err")"
mkfifo "$tmp/topo.fifo"
timeout -k 10 60 "$ndgraph" plan --auto --set runtime.topology="$tmp/topo.fifo" >/dev/null 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && grep -q "^ndgraph: $tmp/topo.fifo: cannot read the topology: not a regular file$" "$tmp/err"
ok $? "plan --auto: a FIFO as the topology is refused, not waited on, exit 2 ($st): $(cat "$tmp/err")"

# the placement trial: where ranks would land on the CPU worker and a device,
# the runtime keeps the faster of the two placements, so the simulator must
# not predict a layout slower than on the CPU worker alone (here the device
# is 1000 times slower than the CPU)
python3 - configs/calibration-8gpu.json >"$tmp/slowdev.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["machine"] = "test: an OpenCL device 1000 times slower than the CPU"
d["devices"] = {"cpu": {"memory_bytes": 0, "gap_us": 4}, "opencl": {"memory_bytes": 0, "gap_us": 4}}
d["kinds"] = {k: {"cpu": v["cuda"], "opencl": {"overhead_us": v["cuda"]["overhead_us"] * 1000,
                                               "gflops": v["cuda"]["gflops"] / 1000, "gbs": v["cuda"]["gbs"] / 1000}}
              for k, v in d["kinds"].items()}
print(json.dumps(d))
PY
small=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set runtime.workers=1)
"$ndgraph" plan "${small[@]}" --set runtime.opencl_devices=1 --auto --json --calibration "$tmp/slowdev.json" >"$tmp/mixed.json" 2>"$tmp/err" &&
  "$ndgraph" plan "${small[@]}" --set runtime.opencl_devices=0 --auto --json --calibration "$tmp/slowdev.json" >"$tmp/cpu.json" 2>>"$tmp/err"
ok $? "plan --auto with a slow device and without it ($(head -c 200 "$tmp/err"))"
python3 - "$tmp/mixed.json" "$tmp/cpu.json" >"$tmp/trial.txt" <<'PY'
import json, sys
cpu = {tuple(p["set"]): p["predicted_step_ms"] for p in json.load(open(sys.argv[2]))["plans"]}
n = worse = 0
for p in json.load(open(sys.argv[1]))["plans"]:
    k = tuple(p["set"])
    if k in cpu and "runtime.scheduler=ndws" in k and "runtime.placement=strict" not in k:
        n += 1
        worse += p["predicted_step_ms"] > cpu[k] * (1 + 1e-9)
print(n, worse)
PY
read -r compared worse <"$tmp/trial.txt"
[ "${compared:-0}" -gt 0 ] && [ "${worse:-1}" -eq 0 ]
ok $? "a device 1000x slower: none of ${compared:-0} ndws layouts under affinity or free placement is predicted slower than on the CPU worker alone (${worse:-?} are)"

# CPU tasks beside a PoCL device: devices.cpu.slowdown_beside_opencl slows
# the CPU tasks that start while the OpenCL device computes (strict placement:
# no trial), and nothing on the CPU workers alone
python3 - "$tmp/slowdev.json" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in d["kinds"].values():
    k["opencl"] = dict(k["cpu"])
d["devices"]["cpu"]["slowdown_beside_opencl"] = 3
json.dump(d, open(sys.argv[2] + "/beside.json", "w"))
del d["devices"]["cpu"]["slowdown_beside_opencl"]
json.dump(d, open(sys.argv[2] + "/alone.json", "w"))
d["devices"]["cpu"]["slowdown_beside_opencl"] = -1
json.dump(d, open(sys.argv[2] + "/badslow.json", "w"))
PY
for f in beside alone; do
  "$ndgraph" plan "${small[@]}" --set runtime.opencl_devices=1 --auto --json --calibration "$tmp/$f.json" >"$tmp/$f.out" 2>"$tmp/err" ||
    break
  "$ndgraph" plan "${small[@]}" --set runtime.opencl_devices=0 --auto --json --calibration "$tmp/$f.json" >"$tmp/$f.cpu" 2>>"$tmp/err" ||
    break
done
python3 - "$tmp" >"$tmp/beside.txt" <<'PY'
import json, sys
def plans(f):
    return {tuple(p["set"]): p["predicted_step_ms"] for p in json.load(open(sys.argv[1] + "/" + f))["plans"]}
beside, alone = plans("beside.out"), plans("alone.out")
strict = [k for k in beside if k in alone and "runtime.placement=strict" in k]
slower = sum(beside[k] > alone[k] * (1 + 1e-9) for k in strict)
faster = sum(beside[k] < alone[k] * (1 - 1e-9) for k in strict)
cpu_same = plans("beside.cpu") == plans("alone.cpu")
print(len(strict), slower, faster, int(cpu_same))
PY
read -r strict slower faster cpu_same <"$tmp/beside.txt"
[ "${strict:-0}" -gt 0 ] && [ "${slower:-0}" -gt 0 ] && [ "${faster:-1}" -eq 0 ] && [ "${cpu_same:-0}" -eq 1 ]
ok $? "slowdown_beside_opencl 3: of ${strict:-0} strict layouts on the mixed node ${slower:-?} slower, ${faster:-?} faster; CPU alone unchanged (${cpu_same:-?}) ($(head -c 200 "$tmp/err"))"
timeout 60 "$ndgraph" plan --auto --calibration "$tmp/badslow.json" >/dev/null 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
  grep -q "badslow.json: devices.cpu.slowdown_beside_opencl must be a non-negative number" "$tmp/err"
ok $? "a negative slowdown_beside_opencl: exit 2 ($st), one line naming the member: $(cat "$tmp/err")"

# ndgraph calibrate on a small model writes a file that plan reads back
"$ndgraph" calibrate "${small[@]}" --set runtime.workers=0 -o "$tmp/measured.json" >/dev/null 2>"$tmp/err" &&
  "$ndgraph" plan "${small[@]}" --auto --calibration "$tmp/measured.json" >/dev/null 2>>"$tmp/err"
ok $? "calibrate -o FILE, then plan --auto --calibration FILE ($(head -c 200 "$tmp/err"))"

# parallelism.auto: run uses the best plan and says so
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set train.steps=1
      --set train.eval_every=0 --set train.save_dir= --set runtime.workers=1)
"$ndgraph" run "${tiny[@]}" --set parallelism.auto=true >"$tmp/run.txt" 2>&1
st=$?
[ "$st" -eq 0 ] && grep -q '^parallelism.auto: predicted .* using .*parallelism.micro_batches=' "$tmp/run.txt"
ok $? "run with parallelism.auto=true prints the plan it uses and trains (exit $st)"

# devices too small for any layout: one line that says so and what the closest layout misses by
sed 's/"memory_bytes": *[0-9]*/"memory_bytes": 1000/' "$srcdir/configs/calibration-8gpu.json" >"$tmp/none.json"
"$ndgraph" plan --auto --set runtime.topology="$srcdir/tests/topologies/gpu8-nvlink2x4.xml" \
  --calibration "$tmp/none.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
  grep -Eq "no layout fits the devices \([0-9]+ rejected for memory; the smallest, dp [0-9]+ cp [0-9]+ tp [0-9]+ pp [0-9]+ with [0-9]+ micro-batches: device cuda[0-9] needs .* has 0.000 GiB \(1000 bytes\)\)$" "$tmp/err"
ok $? "no layout fits: exit 2 ($st), one line with the closest layout's shortfall: $(cat "$tmp/err")"

# a calibration file nothing would read is refused, not ignored (a typo would go unseen)
printf 'garbage' >"$tmp/garbage.json"
"$ndgraph" plan "${tiny[@]}" --calibration "$tmp/garbage.json" >/dev/null 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && [ "$(cat "$tmp/err")" = "ndgraph: --calibration $tmp/garbage.json: only plan --auto reads it" ]
ok $? "plan --calibration without --auto: exit 2 ($st), one line: $(cat "$tmp/err")"
"$ndgraph" run "${tiny[@]}" --calibration "$tmp/garbage.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && [ "$(cat "$tmp/err")" = "ndgraph: --calibration $tmp/garbage.json: only parallelism.auto: true reads it" ] &&
  ! grep -q '^step' "$tmp/out"
ok $? "run --calibration without parallelism.auto: exit 2 ($st), no step: $(cat "$tmp/err")"
"$ndgraph" run "${tiny[@]}" --set parallelism.auto=true --calibration "$tmp/garbage.json" >/dev/null 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$tmp/garbage.json" "$tmp/err"
ok $? "run with parallelism.auto and a malformed calibration: exit 2 ($st), one line: $(cat "$tmp/err")"
# a thousand layers: the planner's time grows gently with the model (the
# timeout is generous, not a timing: before, this took over five minutes)
timeout -k 10 60 "$ndgraph" plan --auto --set model.n_layer=1024 --set model.n_embd=32 \
  --set parallelism.micro_batches=16 --json >"$tmp/long.json" 2>"$tmp/err"
st=$?
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["plans"] and d["extrapolated_layouts"] > 0
assert all(p["predicted_step_ms"] > 0 and 0 <= p["bubble"] < 1 for p in d["plans"])' "$tmp/long.json" 2>/dev/null
ok $? "plan --auto on 1024 layers answers within 60 s (exit $st), its long stages extrapolated ($(head -c 200 "$tmp/err"))"
done_testing
