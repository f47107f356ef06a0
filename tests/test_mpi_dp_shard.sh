#!/usr/bin/env bash
# Sharded data parallelism across processes (docs/nodes.md): dp 4 cut over 2
# and 4 processes under each shard option (parameters: each block's weights
# gathered from ranges that live on both processes), its shard groups
# straddling processes, gives the losses and gradient norms of one process
# without shards, bit for bit.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg="$srcdir/configs/quickstart.yaml"
tiny=(--set model.n_layer=2 --set model.n_embd=64 --set model.n_head=2 --set model.seq_len=32 --set train.steps=4
  --set log.every=1 --set train.save_dir= --set train.eval_every=0 --set train.warmup_steps=1
  --set parallelism.pipeline_parallel_size=1 --set parallelism.data_parallel_size=4
  --set parallelism.micro_batches=2 --set train.micro_batch_size=2 --set runtime.workers=1)


"$ndgraph" run "$cfg" "${tiny[@]}" --metrics "$tmp/one.jsonl" >"$tmp/one.out" 2>&1
ok $? "one process, dp 4, no shards: 4 steps"
# processes, option, shard group size (0: the whole group); a bound on each
# launch, so that a hang fails the case rather than the suite
for case in "2 optimizer 0" "2 gradients 0" "4 gradients 0" "4 gradients 2" "2 parameters 0"; do
  set -- $case
  name="$1 processes, shard $2 in groups of $([ "$3" = 0 ] && echo 4 || echo "$3")"
  timeout -k 5 120 "${mpirun[@]}" -np $1 "$ndgraph" run "$cfg" "${tiny[@]}" --set parallelism.data_parallel_shard=$2 \
    --set parallelism.data_parallel_shard_size=$3 --metrics "$tmp/n.jsonl" >"$tmp/n.out" 2>&1
  st=$?
  [ $st -eq 0 ] && same "$tmp/one.jsonl" "$tmp/n.jsonl"
  ok $? "$name: the losses and gradient norms of one process without shards, bit for bit"
  [ $st -eq 0 ] || sed 's/^/# /' "$tmp/n.out" | tail -3
done
done_testing
