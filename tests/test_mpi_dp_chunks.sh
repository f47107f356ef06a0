#!/usr/bin/env bash
# Data-parallel sums in chunks across processes (docs/nodes.md, The order of
# cross-process sums): each layout under mpirun gives the losses and
# gradient norms of one process bit for bit, StarPU-MPI sends exactly the
# bytes the plan predicts, and, without a sharded optimizer, the plan has
# every process send at most 1.05 times a ring's data-parallel bytes.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg="$srcdir/configs/quickstart.yaml"
tiny=(--set model.n_layer=2 --set model.n_embd=64 --set model.n_head=2 --set model.seq_len=32 --set train.steps=3
  --set log.every=1 --set train.save_dir= --set train.eval_every=0 --set train.warmup_steps=1
  --set parallelism.micro_batches=2 --set train.micro_batch_size=2 --set runtime.workers=1
  --set parallelism.tensor_parallel_size=1)


# processes, dp, pp, shard option, whether a ring bounds its bytes (a
# sharded optimizer all-reduces whole gradients, then gathers ranges: 1.5 x)
for case in "2 2 1 none 1" "2 4 1 none 1" "4 4 1 none 1" "4 2 2 none 1" "2 4 1 gradients 1" "4 4 1 gradients 1" \
  "2 4 1 optimizer 0" "4 4 1 optimizer 0"; do
  set -- $case
  np=$1 name="$1 processes, dp $2 x pp $3, shards $4"
  set_=(--set parallelism.data_parallel_size=$2 --set parallelism.pipeline_parallel_size=$3
    --set parallelism.data_parallel_shard=$4)
  "$ndgraph" run "$cfg" "${tiny[@]}" "${set_[@]}" --metrics "$tmp/one.jsonl" >"$tmp/one.out" 2>&1
  timeout -k 5 120 "${mpirun[@]}" -np $np "$ndgraph" run "$cfg" "${tiny[@]}" "${set_[@]}" --metrics "$tmp/n.jsonl" \
    >"$tmp/n.out" 2>&1
  st=$?
  [ $st -eq 0 ] && same "$tmp/one.jsonl" "$tmp/n.jsonl"
  ok $? "$name: the losses and gradient norms of one process, bit for bit"
  [ $st -eq 0 ] || sed 's/^/# /' "$tmp/n.out" | tail -3
  sent=$(sed -n 's/^mpirun: StarPU-MPI sent \([0-9]*\) bytes for the steps, the plan predicts \([0-9]*\)$/\1 \2/p' "$tmp/n.out")
  set -- $sent $5
  [ -n "$1" ] && [ "$1" -gt 0 ] && [ "$1" = "$2" ]
  ok $? "$name: StarPU-MPI sent the bytes the plan predicts ($sent)"
  [ "$3" = 1 ] || continue
  "$ndgraph" plan "$cfg" "${tiny[@]}" "${set_[@]}" --nodes $np >"$tmp/plan.out" 2>&1
  python3 - "$tmp/plan.out" $np <<'PY'
import re, sys
dp = [(float(a), float(b)) for a, b in re.findall(
    r"data-parallel: sends ([\d.]+) MB, a ring over its group of \d+: ([\d.]+) MB", open(sys.argv[1]).read())]
print(f"# data-parallel MB sent against a ring's: {dp}")
sys.exit(0 if len(dp) == int(sys.argv[2]) and all(a <= 1.05 * b for a, b in dp) else 1)
PY
  ok $? "$name: the plan has every process send at most 1.05 x a ring's data-parallel bytes"
done
done_testing
