#!/usr/bin/env bash
# Same seed, same bits (runtime.deterministic, the default), on a model
# large enough that idle workers take blocks of the other's products and
# attention (common/share.h: over 4e7 flops a kernel): three runs with
# the defaults and one whose idle workers sleep (wait_policy: passive) give
# the same losses bit for bit in --metrics and the same bytes in the final
# checkpoint's model and optimizer tensors. Pipeline of 2 stages, strict
# placement, 8 micro-batches: each stage's worker idles while the other
# runs, which is when it helps. OPENBLAS_CORETYPE, when set, chooses the
# BLAS kernels of every run (tests/test_bits_coretypes.sh).
. "${ND_SRCDIR:-.}/tests/tap.sh"

set_args=(--set model.n_layer=4 --set model.n_head=8 --set model.n_embd=256 --set model.seq_len=128
  --set parallelism.pipeline_parallel_size=2 --set parallelism.micro_batches=8 --set train.micro_batch_size=4
  --set runtime.placement=strict --set train.steps=4 --set log.every=1 --set train.eval_every=0 --set train.save_every=0)

runs=(default-1 default-2 default-3 passive)
for run in "${runs[@]}"; do
  extra=()
  [ "$run" = passive ] && extra=(--set runtime.wait_policy=passive)
  "$ndgraph" run "${set_args[@]}" "${extra[@]}" --set train.save_dir="$tmp/$run" --metrics "$tmp/$run.jsonl" \
    >"$tmp/$run.out" 2>&1
  ok $? "run $run: 4 steps of n_embd 256, pp=2, 8 micro-batches, strict ($(grep -c '^step' "$tmp/$run.out") lines)"
done

want=$(metric_losses "$tmp/default-1.jsonl")
diag "default-1 losses: $want"
for run in "${runs[@]:1}"; do
  got=$(metric_losses "$tmp/$run.jsonl")
  [ -n "$want" ] && [ "$got" = "$want" ]
  ok $? "run $run: the same 4 losses bit for bit as default-1${got:+ ($got)}"
  for file in model.safetensors optimizer.safetensors; do
    cmp -s "$tmp/default-1/step-4/$file" "$tmp/$run/step-4/$file"
    ok $? "run $run: step-4/$file byte for byte as default-1's"
  done
done
done_testing
