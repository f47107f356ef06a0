#!/usr/bin/env bash
# scripts/kill-test.sh under mpirun, small (docs/reliability.md): kill -9 of
# one process of `mpirun -np 2` at a random moment, 3 times: the job ends
# non-zero within 30 s, every checkpoint left in save_dir is complete, and
# the newest resumes.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg=$(cd "$srcdir" && pwd)/configs/quickstart.yaml
run=(run "$cfg" --set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16
  --set train.eval_every=0 --set log.every=1 --set parallelism.micro_batches=2 --set train.micro_batch_size=2
  --set runtime.workers=1 --set parallelism.data_parallel_size=2 --set parallelism.pipeline_parallel_size=1
  --set train.save_every=1)
trap 'kill -KILL $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

for trial in 1 2 3; do
  dir="$tmp/ck$trial"
  "${mpirun[@]}" -np 2 "$ndgraph" "${run[@]}" --set train.steps=100000 --set train.save_dir="$dir" \
    >"$tmp/$trial.out" 2>&1 &
  job=$!
  for _ in $(seq 300); do grep -q '^step  *2 | checkpoint' "$tmp/$trial.out" && break; sleep 0.1; done
  # a random moment within the next second: in a step, a checkpoint, or between them
  sleep "0.$((RANDOM % 10))"
  victims=($(pgrep -P "$job" -x ndgraph))
  victim=${victims[$((RANDOM % ${#victims[@]}))]}
  kill -KILL "$victim"
  start=$SECONDS
  for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  took=$((SECONDS - start))
  kill -KILL "$job" 2>/dev/null
  wait "$job"; st=$?
  [ ${#victims[@]} -eq 2 ] && [ "$st" -ne 0 ] && [ "$took" -le 30 ]
  ok $? "trial $trial: one of ${#victims[@]} processes killed, the job ends non-zero (exit $st) within 30 s ($took s)"
  complete=0
  for d in "$dir"/step-*; do
    [ -f "$d/model.safetensors" ] && [ -f "$d/optimizer.safetensors" ] && [ -f "$d/config.json" ] &&
      [ -f "$d/state.json" ] || complete=1
  done
  n=$(ls "$dir" | sed -n 's/^step-\([0-9]*\)$/\1/p' | sort -n | tail -1)
  [ -n "$n" ] && [ $complete -eq 0 ]; ok $? "trial $trial: every step-N left is complete, the newest step-${n:-?}"
  "$ndgraph" "${run[@]}" --set parallelism.data_parallel_size=1 --set train.steps=$((${n:-0} + 1)) \
    --set train.save_dir="$dir" --resume "$dir" >"$tmp/resume$trial.out" 2>&1
  st=$?
  [ $st -eq 0 ] && grep -q "^resumed from .*step-$n at step $n" "$tmp/resume$trial.out" &&
    ! ls -a "$dir" | grep -q '\.tmp'
  ok $? "trial $trial: it resumes from step-${n:-?}, no temporary left (exit $st): $(grep -m1 -e '^resumed' -e error "$tmp/resume$trial.out")"
done
done_testing
