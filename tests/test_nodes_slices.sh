#!/usr/bin/env bash
# Pipeline hand-overs of 1/tp (docs/nodes.md): each tensor rank sends its
# slice across a stage boundary and the receiving stage all-gathers it. The
# bits are those of whole copies (one process, and pp 2 x tp 2 on 2
# processes); plan --nodes shows each process's pipeline bytes at 1/tp of
# whole copies; the tasks each process submits and their time are in the
# metrics and agree with the plan.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg="$srcdir/configs/quickstart.yaml"
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set train.steps=3
  --set log.every=1 --set train.save_dir= --set train.eval_every=0 --set train.warmup_steps=1
  --set parallelism.micro_batches=2 --set parallelism.activation_slots=2 --set runtime.workers=1
  --set parallelism.pipeline_parallel_size=2)


# one process: slices and gathers against whole copies (split_tensor_groups sends those)
"$ndgraph" run "$cfg" "${tiny[@]}" --set parallelism.tensor_parallel_size=2 --metrics "$tmp/slices.jsonl" >/dev/null 2>&1
"$ndgraph" run "$cfg" "${tiny[@]}" --set parallelism.tensor_parallel_size=2 --set runtime.split_tensor_groups=true \
  --metrics "$tmp/whole.jsonl" >/dev/null 2>&1
same "$tmp/slices.jsonl" "$tmp/whole.jsonl"
ok $? "one process, pp=2 tp=2: sliced hand-overs give the bits of whole copies"

# 2 processes, one stage each: the slices cross between processes
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" --set parallelism.tensor_parallel_size=2 \
  --metrics "$tmp/n.jsonl" >"$tmp/n.out" 2>&1
st=$?
[ $st -eq 0 ] && same "$tmp/slices.jsonl" "$tmp/n.jsonl"
ok $? "2 processes, pp=2 tp=2: the losses and gradient norms of one process, bit for bit"
[ $st -eq 0 ] || sed 's/^/# /' "$tmp/n.out" | tail -5
python3 - "$tmp/n.out" <<'PY'
import re, sys
m = re.search(r"StarPU-MPI sent (\d+) bytes for the steps, the plan predicts (\d+)\n", open(sys.argv[1]).read())
print(f"# sent {m.group(1) if m else '?'}, predicted {m.group(2) if m else '?'}")
sys.exit(0 if m and int(m.group(2)) > 0 and abs(int(m.group(1)) - int(m.group(2))) <= 0.05 * int(m.group(2)) else 1)
PY
ok $? "2 processes, pp=2 tp=2: bytes StarPU-MPI sent within 5% of the plan's prediction"

# plan --nodes: a process's pipeline bytes per step are one copy of the
# activation (B T C floats) per micro-batch, 1/tp of what tp whole copies
# send; the other classes add up to the total
B=4 T=16 C=32 M=2
for tp in 1 2 4; do
  "$ndgraph" plan "$cfg" "${tiny[@]}" --set parallelism.tensor_parallel_size=$tp --nodes 2 >"$tmp/plan$tp.out" 2>&1
  python3 - "$tmp/plan$tp.out" $((B * T * C * 4 * M)) <<'PY'
import re, sys
t, want = open(sys.argv[1]).read(), int(sys.argv[2])
rows = re.findall(r"sends ([\d.]+) MB \(pipeline ([\d.]+), data-parallel ([\d.]+), other ([\d.]+)\)", t)
print(f"# {rows}, want pipeline {want / 1e6:.3f} MB each")
sys.exit(0 if len(rows) == 2 and all(abs(float(p) - want / 1e6) < 1e-3 and
                                     abs(float(s) - float(p) - float(d) - float(o)) < 2e-3 for s, p, d, o in rows) else 1)
PY
  ok $? "plan --nodes 2, pp=2 tp=$tp: each process sends one activation's bytes per micro-batch (1/tp of whole copies)"
done

# the tasks each process submits and their submission time: in every
# metrics line, per process; they are the plan's figures, and with chains
# (tasks/chain.h) together fewer than the graph's tasks
python3 - "$tmp/n.jsonl" "$tmp/plan2.out" <<'PY'
import json, re, sys
lines = [l for l in map(json.loads, open(sys.argv[1])) if "loss" in l]
plan = open(sys.argv[2]).read()
total = int(re.search(r"(\d+) tasks per step", plan).group(1))
submits = [int(x) for x in re.findall(r"submits (\d+),", plan)]
est = [float(x) for x in re.findall(r"submission about ([\d.]+) ms", plan)]
ok = len(lines) == 3 and len(submits) == 2 and len(est) == 2 and all(x > 0 for x in est)
for l in lines:
    n, ms = l.get("tasks_submitted"), l.get("submit_ms")
    print(f"# step {l['step']}: tasks_submitted {n}, submit_ms {ms}; plan: submits {submits} of {total}, about {est} ms")
    ok = ok and n == submits and sum(n) < total and len(ms) == 2 and all(x > 0 for x in ms)
sys.exit(0 if ok else 1)
PY
ok $? "2 processes: tasks submitted and submission ms per process in the metrics, the plan's counts, chained: sum < the graph's tasks"
grep -q "^mpirun: the last step's submission, per process: [0-9]* tasks in [0-9.]* ms, [0-9]* tasks in [0-9.]* ms$" "$tmp/n.out"
ok $? "2 processes: the run's summary prints each process's submission"
done_testing
