#!/usr/bin/env bash
# Several processes (docs/nodes.md) under OpenMPI on this machine, over TCP on
# loopback: each layout gives the losses and gradient norms of the same
# layout in one process bit for bit, and the single-rank reference within
# 1e-4; checkpoints resume across process counts; a different configuration
# is refused; a killed process ends the job; StarPU-MPI's bytes match the plan.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg="$srcdir/configs/quickstart.yaml"
tiny=(--set model.n_layer=3 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16 --set train.steps=3
  --set log.every=1 --set train.save_dir= --set train.eval_every=0 --set train.warmup_steps=1
  --set parallelism.micro_batches=2 --set parallelism.activation_slots=2 --set runtime.workers=1)

# layout DP PP TP: the --set arguments of that layout
layout() { echo "--set parallelism.data_parallel_size=$1 --set parallelism.pipeline_parallel_size=$2 --set parallelism.tensor_parallel_size=$3"; }


# near A B: losses within 1e-4 (relative) of the reference's
near() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = ([l["loss"] for l in map(json.loads, open(p)) if "loss" in l] for p in sys.argv[1:3])
sys.exit(0 if len(a) == len(b) > 0 and all(abs(x - y) <= 1e-4 * abs(y) for x, y in zip(a, b)) else 1)
PY
}

# the single-rank reference of the global batch of dp replicas
"$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 1 1) --set parallelism.micro_batches=2 --metrics "$tmp/ref1.jsonl" >/dev/null 2>&1
"$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 1 1) --set parallelism.micro_batches=4 --metrics "$tmp/ref2.jsonl" >/dev/null 2>&1

for case in "2 2 1 1" "2 1 2 1" "3 1 3 1" "2 2 1 2" "2 2 2 2" "3 2 2 2"; do
  set -- $case
  np=$1 name="dp=$2 pp=$3 tp=$4"
  "$ndgraph" run "$cfg" "${tiny[@]}" $(layout $2 $3 $4) --metrics "$tmp/one.jsonl" >"$tmp/one.out" 2>&1
  "${mpirun[@]}" -np $np "$ndgraph" run "$cfg" "${tiny[@]}" $(layout $2 $3 $4) --metrics "$tmp/n.jsonl" >"$tmp/n.out" 2>&1
  st=$?
  [ $st -eq 0 ] && same "$tmp/one.jsonl" "$tmp/n.jsonl"
  ok $? "$np processes, $name: the losses and gradient norms of one process, bit for bit"
  [ $st -eq 0 ] || sed 's/^/# /' "$tmp/n.out" | tail -5
  near "$tmp/n.jsonl" "$tmp/ref$2.jsonl"
  ok $? "$np processes, $name: within 1e-4 of the single-rank losses"
  [ "$(grep -c '^step ' "$tmp/n.out")" -eq 3 ]
  ok $? "$np processes, $name: only process 0 prints the step lines"
  # StarPU-MPI's count of bytes against the plan's
  python3 - "$tmp/n.out" <<'PY'
import re, sys
m = re.search(r"StarPU-MPI sent (\d+) bytes for the steps, the plan predicts (\d+)\n", open(sys.argv[1]).read())
print(f"# sent {m.group(1) if m else '?'}, predicted {m.group(2) if m else '?'}")
sys.exit(0 if m and int(m.group(2)) > 0 and abs(int(m.group(1)) - int(m.group(2))) <= 0.05 * int(m.group(2)) else 1)
PY
  ok $? "$np processes, $name: bytes StarPU-MPI sent within 5% of the plan's prediction"
done

# plan --nodes: ranks and bytes per process; the data-parallel sums go in
# chunks, so that each process sends what a ring all-reduce would (IR only)
"$ndgraph" plan "$cfg" --set parallelism.data_parallel_size=4 --nodes 4 >"$tmp/plan.out" 2>&1
python3 - "$tmp/plan.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
total = float(re.search(r"([\d.]+) MB sent between processes per step", t).group(1))
procs = re.findall(r"process (\d): ranks (d\dp\dt\d\.\.d\dp\dt\d) \| runs \d+ tasks, submits \d+, sends ([\d.]+) MB", t)
dp = [(float(a), float(b)) for a, b in re.findall(r"data-parallel: sends ([\d.]+) MB, a ring over its group of 4: ([\d.]+) MB", t)]
sends = [float(p[2]) for p in procs]
print(f"# sends {sends} MB, data-parallel against a ring {dp} MB, total {total} MB")
sys.exit(0 if len(procs) == 4 and abs(sum(sends) - total) < 0.01 and len(dp) == 4 and all(a <= 1.05 * b for a, b in dp) else 1)
PY
ok $? "plan --nodes 4, dp=4: each process's ranks and bytes, its data-parallel bytes within 5% of a ring all-reduce's"
# `mpirun -np 2 ndgraph plan`: the launch's cut, said once
"${mpirun[@]}" -np 2 "$ndgraph" plan "$cfg" --set parallelism.data_parallel_size=2 >"$tmp/mplan.out" 2>&1
st=$?
[ $st -eq 0 ] && [ "$(grep -c '^training-step graph' "$tmp/mplan.out")" -eq 1 ] &&
  grep -q '^nodes: 2 processes' "$tmp/mplan.out" && [ "$(grep -c '^  process [01]: ranks' "$tmp/mplan.out")" -eq 2 ]
ok $? "mpirun -np 2 ndgraph plan: one plan, cut across the 2 processes as --nodes 2 (exit $st)"

# a tensor-parallel group across processes only when asked, then with the bits of one process
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 1 2) >"$tmp/tpx.out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "unless runtime.split_tensor_groups is true" "$tmp/tpx.out"
ok $? "2 processes, tp=2 alone: refused, naming runtime.split_tensor_groups (exit $st)"
"$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 1 2) --metrics "$tmp/tp1.jsonl" >/dev/null 2>&1
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 1 2) --set runtime.split_tensor_groups=true \
  --metrics "$tmp/tp2.jsonl" >"$tmp/tpx.out" 2>&1
[ $? -eq 0 ] && same "$tmp/tp1.jsonl" "$tmp/tp2.jsonl" && grep -q "process 1 on .* ranks d0p0t1\.\.d0p0t1$" "$tmp/tpx.out"
ok $? "2 processes, tp=2, split_tensor_groups: one shard per process, the losses of one process bit for bit"

# the processes told each other their machines and devices at start (the last case: 3 processes)
[ "$(grep -cE '^  process [0-2] on .*cores.*CPU workers.*OpenCL.*CUDA \| ranks d[0-9]p[0-9]t[0-9]\.\.d[0-9]p[0-9]t[0-9]$' "$tmp/n.out")" -eq 3 ]
ok $? "3 processes: process 0 prints each process's host, topology, devices and ranks"

# --trace under mpirun: one Perfetto file, a process per node, arrows between nodes
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 2 2 1) --trace "$tmp/trace.json" >"$tmp/trace.out" 2>&1
st=$?
python3 - "$tmp/trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
ran = {e["pid"] for e in ev if e["ph"] == "X"}
src = {e["id"]: e["pid"] for e in ev if e["ph"] == "s"}
across = sum(1 for e in ev if e["ph"] == "f" and e["id"] in src and src[e["id"]] != e["pid"])
print(f"# process_name for {sorted(names)}, tasks on {sorted(ran)}, {across} arrows between nodes")
sys.exit(0 if names == ran == {0, 1} and across > 0 else 1)
PY
parsed=$?
[ $st -eq 0 ] && [ $parsed -eq 0 ]
ok $? "2 processes, --trace: one JSON file, a process_name per node, arrows between the nodes"
[ -z "$(ls "$tmp" | grep -E '^trace\.json.+')" ]
ok $? "2 processes, --trace: the file written atomically by process 0 alone (no temporary left)"

# runtime.placement applies under mpirun: with 2 workers per process and
# placement strict, each process runs each of its stages on one worker of
# its own (read from the trace; collectives, homed on a participant, aside)
STARPU_NCPU=2 "${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 2 2 1) --set runtime.workers=2 \
  --set runtime.placement=strict --trace "$tmp/strict.json" >"$tmp/strict.out" 2>&1
st=$?
python3 - "$tmp/strict.json" <<'PY'
import json, sys
from collections import defaultdict
ev = json.load(open(sys.argv[1]))["traceEvents"]
tids = defaultdict(set)
for e in ev:
    if e["ph"] == "X" and e["args"]["kind"] not in ("allreduce", "sendrecv"):
        tids[(e["pid"], e["args"]["pp"])].add(e["tid"])
print(f"# (process, stage) -> workers: {dict(tids)}")
one = all(len(t) == 1 for t in tids.values())
apart = all(tids[(p, 0)] != tids[(p, 1)] for p in (0, 1))
sys.exit(0 if set(tids) == {(0, 0), (0, 1), (1, 0), (1, 1)} and one and apart else 1)
PY
parsed=$?
[ $st -eq 0 ] && [ $parsed -eq 0 ]
ok $? "2 processes x 2 workers, placement strict: each process holds each of its stages to one worker of its own"

# stage_layers auto under mpirun: process 0 decides for all (docs/nodes.md)
auto=(--set parallelism.stage_layers=auto)
"$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 2 1) "${auto[@]}" --metrics "$tmp/auto1.jsonl" >/dev/null 2>&1
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 2 1) "${auto[@]}" --metrics "$tmp/auto2.jsonl" \
  >"$tmp/auto.out" 2>&1
[ $? -eq 0 ] && same "$tmp/auto1.jsonl" "$tmp/auto2.jsonl"
ok $? "2 processes, pp=2, stage_layers auto: accepted, the losses of one process bit for bit"
# a CPU and an OpenCL stage on each process: the calibration's times come from both processes; 4 layers on 4
# stages keep the even split, so the processes restart on their graphs (train/trainer.c), and train from step 0
# with the losses of one CPU process (within a device's rounding)
mixed=(--set model.n_layer=4 --set parallelism.micro_batches=4 --set train.steps=2)
"$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 4 1) "${mixed[@]}" --metrics "$tmp/mixed1.jsonl" >/dev/null 2>&1
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 1 4 1) "${auto[@]}" "${mixed[@]}" \
  --set runtime.opencl_devices=1 --metrics "$tmp/mixed2.jsonl" >"$tmp/mixed.out" 2>&1
st=$?
if grep -q "OpenCL device" "$tmp/mixed.out" && [ $st -ne 0 ]; then
  ok 0 "# SKIP 2 processes, mixed stages, stage_layers auto: no OpenCL device"
else
  [ $st -eq 0 ] && grep -q "stage 1, opencl.*stage 2, cpu.*stage 3, opencl.*-> stage_layers \[1, 1, 1, 1\]" \
    "$tmp/mixed.out" && near "$tmp/mixed2.jsonl" "$tmp/mixed1.jsonl"
  ok $? "2 processes, pp=4 on a CPU and an OpenCL device each, stage_layers auto: calibrated across the processes, \
restarted on the even split with one process's losses"
  grep -m1 "stage_layers auto:" "$tmp/mixed.out" | sed 's/^/# /'
fi

# resume across process counts: a checkpoint of 2 processes continues on 1,
# and one of 1 process on 2, with the losses of an uninterrupted run
steps=(--set train.steps=4 --set train.save_every=2 --set train.eval_every=2 --set train.eval_batches=2)
"$ndgraph" run "$cfg" "${tiny[@]}" "${steps[@]}" $(layout 2 1 1) --set train.save_dir="$tmp/a" --metrics "$tmp/full.jsonl" >/dev/null 2>&1
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" "${steps[@]}" $(layout 2 1 1) --set train.save_dir="$tmp/b" \
  --metrics "$tmp/b.jsonl" >"$tmp/b.out" 2>&1
[ -f "$tmp/b/step-2/model.safetensors" ] && [ -f "$tmp/b/step-4/model.safetensors" ] &&
  cmp -s "$tmp/a/step-4/model.safetensors" "$tmp/b/step-4/model.safetensors"
ok $? "2 processes write one checkpoint directory per save (process 0, after gathering), the same bytes as 1 process"
# the checkpoints' gathering is counted apart from the steps' bytes (it used to inflate them by a third)
python3 - "$tmp/b.out" <<'PY'
import re, sys
m = re.search(r"sent (\d+) bytes for the steps, the plan predicts (\d+); and (\d+) gathering checkpoints\n",
              open(sys.argv[1]).read())
print(f"# {m.groups() if m else open(sys.argv[1]).read()[-300:]}")
sys.exit(0 if m and int(m.group(3)) > 0 and int(m.group(1)) >= int(m.group(2)) > 0 else 1)
PY
ok $? "2 processes with checkpoints: the bytes gathering them reported apart from the steps'"
python3 - "$tmp/full.jsonl" "$tmp/b.jsonl" <<'PY'
import json, sys
a, b = ([(l["step"], l["val_loss"]) for l in map(json.loads, open(p)) if "val_loss" in l] for p in sys.argv[1:3])
sys.exit(0 if len(a) == 2 and a == b else 1)
PY
ok $? "2 processes evaluate with the validation losses of 1 process, bit for bit"
"$ndgraph" run "$cfg" "${tiny[@]}" "${steps[@]}" $(layout 2 1 1) --set train.save_dir="$tmp/c" --resume "$tmp/b/step-2" \
  --metrics "$tmp/c.jsonl" >/dev/null 2>&1
python3 - "$tmp/full.jsonl" "$tmp/c.jsonl" <<'PY'
import json, sys
a, b = ([(l["step"], l["loss"]) for l in map(json.loads, open(p)) if "loss" in l] for p in sys.argv[1:3])
sys.exit(0 if b and a[2:] == b else 1)
PY
ok $? "a 2-process checkpoint resumes on 1 process with the uninterrupted losses"
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" "${steps[@]}" $(layout 2 1 1) --set train.save_dir="$tmp/d" \
  --resume "$tmp/a/step-2" --metrics "$tmp/d.jsonl" >/dev/null 2>&1
python3 - "$tmp/full.jsonl" "$tmp/d.jsonl" <<'PY'
import json, sys
a, b = ([(l["step"], l["loss"]) for l in map(json.loads, open(p)) if "loss" in l] for p in sys.argv[1:3])
sys.exit(0 if b and a[2:] == b else 1)
PY
ok $? "a 1-process checkpoint resumes on 2 processes with the uninterrupted losses"

# a different configuration on one process is refused, naming it
"${mpirun[@]}" -np 1 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 2 1 1) : \
  -np 1 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 2 1 1) --set train.seed=7 >"$tmp/mismatch.out" 2>&1
st=$?
[ $st -ne 0 ] && grep -q "process 1 runs a different configuration" "$tmp/mismatch.out"
ok $? "a different configuration on process 1 is refused, naming it (exit $st)"
grep "different configuration" "$tmp/mismatch.out" | head -1 | sed 's/^/# /'

# SIGTERM to mpirun (which passes it on to every process): all stop after the
# same step, process 0 writes the checkpoint, and the job ends without an abort
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 2 1 1) --set train.steps=100000 \
  --set train.save_dir="$tmp/sig" >"$tmp/sig.out" 2>&1 &
job=$!
for _ in $(seq 300); do grep -q '^step ' "$tmp/sig.out" && break; sleep 0.1; done
kill -TERM $job
wait_or_kill $job 300
st=$?
n=$(sed -n 's/^ndgraph: SIGTERM after step \([0-9]*\): checkpoint .*; stopping$/\1/p' "$tmp/sig.out")
[ $st -ne 0 ] && [ -n "$n" ] && [ -f "$tmp/sig/step-$n/model.safetensors" ] && [ -f "$tmp/sig/step-$n/state.json" ] &&
  ! grep -q MPI_ABORT "$tmp/sig.out"
ok $? "SIGTERM to mpirun: every process stops after step ${n:-?}, its checkpoint complete, no abort (exit $st)"

# SIGKILL of one process mid-run: the job ends, non-zero, within 30 s
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" $(layout 2 1 1) --set train.steps=100000 >"$tmp/kill.out" 2>&1 &
job=$!
for _ in $(seq 300); do grep -q '^step ' "$tmp/kill.out" && break; sleep 0.1; done
victim=
for p in $(pgrep -P $job); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
[ -n "$victim" ] && kill -KILL "$victim"
start=$(date +%s)
for _ in $(seq 300); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
kill -0 $job 2>/dev/null && kill -KILL $job
wait $job
st=$?
elapsed=$(($(date +%s) - start))
[ -n "$victim" ] && [ $st -ne 0 ] && [ $elapsed -le 30 ]
ok $? "process 1 killed mid-run: the job exits $st after $elapsed s"
grep -m1 "exited on signal" "$tmp/kill.out" | sed 's/^/# /'

done_testing
