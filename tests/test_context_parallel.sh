#!/usr/bin/env bash
# parallelism.context_parallel_size in `plan` and as bad input: at seq_len
# 256 the activation bytes of a rank fall to at most 0.55x of cp 1 at cp 2
# and 0.30x at cp 4 (GPT-2; Llama at cp 2 too); a sequence that does not cut
# into 2 cp equal chunks, cp 0, cp past seq_len / 2 and cp under plan --auto
# are each one line naming the keys, exit 2; `plan --nodes` cuts a cp layout across
# processes, and two processes under mpirun train as one does; a checkpoint
# moves between cp 2 and cp 1 or 4.
. "${ND_SRCDIR:-.}/tests/tap.sh"

one=(--set model.seq_len=256 --set parallelism.pipeline_parallel_size=1)
act() { # the largest activation bytes of a rank under --set context_parallel_size=$1 (then more --set)
  local cp=$1; shift
  "$ndgraph" plan "${one[@]}" "$@" --set "parallelism.context_parallel_size=$cp" --json |
    grep -oE '"activation_bytes":[0-9]+' | cut -d: -f2 | sort -n | tail -1
}
a1=$(act 1) a2=$(act 2) a4=$(act 4)
diag "activation bytes per rank at seq_len 256: cp 1 $a1, cp 2 $a2, cp 4 $a4"
awk -v a="$a2" -v b="$a1" 'BEGIN { exit !(b > 0 && a / b <= 0.55) }'
ok $? "plan: activations per rank at cp 2 are $(awk -v a="$a2" -v b="$a1" 'BEGIN { printf "%.3f", a / b }')x of cp 1 (need <= 0.55)"
awk -v a="$a4" -v b="$a1" 'BEGIN { exit !(b > 0 && a / b <= 0.30) }'
ok $? "plan: activations per rank at cp 4 are $(awk -v a="$a4" -v b="$a1" 'BEGIN { printf "%.3f", a / b }')x of cp 1 (need <= 0.30)"
l1=$(act 1 "$srcdir/configs/llama-tiny.yaml") l2=$(act 2 "$srcdir/configs/llama-tiny.yaml")
awk -v a="$l2" -v b="$l1" 'BEGIN { exit !(b > 0 && a / b <= 0.55) }'
ok $? "plan: Llama's activations per rank at cp 2 are $(awk -v a="$l2" -v b="$l1" 'BEGIN { printf "%.3f", a / b }')x of cp 1 (need <= 0.55)"
"$ndgraph" plan --set parallelism.context_parallel_size=2 >"$tmp/plan" 2>&1
grep -q '^context: 2 ranks a replica, 32 tokens of each sequence a rank$' "$tmp/plan"
ok $? "plan names the context ranks and their tokens"
"$ndgraph" plan --set parallelism.context_parallel_size=2 --nodes 2 >"$tmp/nodes" 2>&1
grep -q '^nodes: 2 processes' "$tmp/nodes"
ok $? "plan --nodes 2 cuts a cp 2 layout across processes"

expect 2 'model.seq_len.*\(250\).*divisible by 2 \* parallelism.context_parallel_size \(4\)' \
  "seq_len 250 with cp 2: not 4 equal chunks" -- "$ndgraph" plan --set model.seq_len=250 \
  --set parallelism.context_parallel_size=2
expect 2 'parallelism.context_parallel_size' "cp 0 is refused" -- "$ndgraph" plan \
  --set parallelism.context_parallel_size=0
expect 2 'model.seq_len \(64\) must be divisible by 2 \* parallelism.context_parallel_size \(128\)' \
  "cp 64 past seq_len / 2 (64 tokens)" -- "$ndgraph" plan --set parallelism.context_parallel_size=64
"$ndgraph" plan --auto --set parallelism.context_parallel_size=2 >"$tmp/auto" 2>&1 && grep -q "context_parallel_size=" "$tmp/auto"
ok $? "plan --auto plans a configuration with cp 2 (it enumerates cp itself: tests/test_plan_context.sh)"
# a checkpoint of cp 2 resumes at cp 1 and cp 4 where the cp 2 run went on
ck=(--set model.n_layer=2 --set parallelism.pipeline_parallel_size=1 --set train.eval_every=0 --set log.every=1
  --set train.steps=4)
"$ndgraph" run "${ck[@]}" --set parallelism.context_parallel_size=2 --set train.save_dir="$tmp/ck" \
  --set train.save_every=2 2>&1 | grep -o '^step     4 | loss [0-9.]*' >"$tmp/ck2"
for cp in 1 4; do
  "$ndgraph" run "${ck[@]}" --set parallelism.context_parallel_size=$cp --set train.save_dir= \
    --resume "$tmp/ck/step-2" 2>&1 | grep -o '^step     4 | loss [0-9.]*' >"$tmp/ck$cp"
  [ -s "$tmp/ck2" ] && cmp -s "$tmp/ck2" "$tmp/ck$cp"
  ok $? "a cp 2 checkpoint resumed at cp $cp: step 4's loss of the cp 2 run ($(cat "$tmp/ck$cp"))"
done

# two processes, one context rank each: the ring's blocks are StarPU-MPI sends
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1
  export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
  tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16 --set train.steps=3
    --set train.save_dir= --set train.eval_every=0 --set parallelism.micro_batches=2 --set parallelism.activation_slots=2
    --set runtime.workers=1 --set parallelism.pipeline_parallel_size=1 --set parallelism.context_parallel_size=2)
  "$ndgraph" run "${tiny[@]}" >"$tmp/one" 2>&1
  timeout -k 10 300 mpirun --oversubscribe -x STARPU_HOME -x STARPU_SILENT -x STARPU_NCPU -x STARPU_WORKERS_NOBIND \
    -np 2 "$ndgraph" run "${tiny[@]}" >"$tmp/two" 2>&1
  st=$?
  [ $st -eq 0 ] && [ -n "$(grep -o 'loss [0-9.]*' "$tmp/one")" ] &&
    [ "$(grep -o 'loss [0-9.]*' "$tmp/one")" = "$(grep -o 'loss [0-9.]*' "$tmp/two")" ]
  ok $? "2 processes, cp 2: the losses of one process"
  grep -qE 'StarPU-MPI sent ([0-9]+) bytes for the steps, the plan predicts \1$' "$tmp/two"
  ok $? "2 processes, cp 2: StarPU-MPI sends what the plan predicts ($(grep -o 'sent [0-9]* bytes' "$tmp/two"))"
else
  diag "no mpirun: the two-process case is not run"
fi
# context ranks are data-parallel ranks to the shard options: each gives the bits of none
shard=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=32 --set train.steps=4
  --set train.save_dir= --set train.eval_every=0 --set log.every=1 --set parallelism.context_parallel_size=2
  --set parallelism.data_parallel_size=2)
"$ndgraph" run "${shard[@]}" --metrics "$tmp/shard-none.jsonl" >/dev/null 2>&1
for option in optimizer gradients parameters; do
  "$ndgraph" run "${shard[@]}" --set parallelism.data_parallel_shard=$option --metrics "$tmp/shard-$option.jsonl" >/dev/null 2>&1
  a=$(metric_losses "$tmp/shard-none.jsonl") b=$(metric_losses "$tmp/shard-$option.jsonl")
  [ -n "$a" ] && [ "$a" = "$b" ]
  ok $? "cp 2 x dp 2, data_parallel_shard $option: the losses of none, bit for bit ($b)"
done

done_testing
