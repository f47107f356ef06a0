#!/usr/bin/env bash
# Several processes (docs/nodes.md) under OpenMPI on this machine, over TCP on
# loopback: each layout gives the losses and gradient norms of the same
# layout in one process bit for bit, and the single-rank reference within
# 1e-4; checkpoints resume across process counts; a different configuration
# is refused; a killed process ends the job; StarPU-MPI's bytes match the plan.
. "${ND_SRCDIR:-.}/tests/tap.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
mpirun=(mpirun --oversubscribe -x STARPU_HOME -x STARPU_SILENT -x STARPU_NCPU -x STARPU_WORKERS_NOBIND)
cfg="$srcdir/configs/quickstart.yaml"
tiny=(--set model.n_layer=3 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16 --set train.steps=3
  --set log.every=1 --set train.save_dir= --set train.eval_every=0 --set train.warmup_steps=1
  --set parallelism.micro_batches=2 --set parallelism.activation_slots=2 --set runtime.workers=1)

# layout DP PP TP: the --set arguments of that layout
layout() { echo "--set parallelism.data_parallel_size=$1 --set parallelism.pipeline_parallel_size=$2 --set parallelism.tensor_parallel_size=$3"; }

# same A B: the losses and gradient norms of two metrics files are the same bits
same() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = ([(l["step"], l["loss"], l["grad_norm"]) for l in map(json.loads, open(p)) if "loss" in l] for p in sys.argv[1:3])
sys.exit(0 if a == b and len(a) > 0 else 1)
PY
}

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
m = re.search(r"StarPU-MPI sent (\d+) bytes, the plan predicts (\d+)", open(sys.argv[1]).read())
print(f"# sent {m.group(1) if m else '?'}, predicted {m.group(2) if m else '?'}")
sys.exit(0 if m and int(m.group(2)) > 0 and abs(int(m.group(1)) - int(m.group(2))) <= 0.05 * int(m.group(2)) else 1)
PY
  ok $? "$np processes, $name: bytes StarPU-MPI sent within 5% of the plan's prediction"
done

# resume across process counts: a checkpoint of 2 processes continues on 1,
# and one of 1 process on 2, with the losses of an uninterrupted run
steps=(--set train.steps=4 --set train.save_every=2 --set train.eval_every=2 --set train.eval_batches=2)
"$ndgraph" run "$cfg" "${tiny[@]}" "${steps[@]}" $(layout 2 1 1) --set train.save_dir="$tmp/a" --metrics "$tmp/full.jsonl" >/dev/null 2>&1
"${mpirun[@]}" -np 2 "$ndgraph" run "$cfg" "${tiny[@]}" "${steps[@]}" $(layout 2 1 1) --set train.save_dir="$tmp/b" \
  --metrics "$tmp/b.jsonl" >/dev/null 2>&1
[ -f "$tmp/b/step-2/model.safetensors" ] && [ -f "$tmp/b/step-4/model.safetensors" ] &&
  cmp -s "$tmp/a/step-4/model.safetensors" "$tmp/b/step-4/model.safetensors"
ok $? "2 processes write one checkpoint directory per save (process 0, after gathering), the same bytes as 1 process"
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
