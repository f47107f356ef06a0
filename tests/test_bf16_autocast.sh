#!/usr/bin/env bash
# ndgraph's train.precision bf16 against PyTorch's torch.autocast(bfloat16) on
# the CPU (tests/bf16_autocast_ref.py): the quick-start model's weights before
# the first step (a one-step run whose learning rate of 1e-30 changes no
# weight, saved as the Hugging Face checkpoint transformers reads), the same
# sequences, AdamW and clipping; the first 3 losses within 1e-3 relative.
# Skipped where python3 cannot import torch and transformers.
if ! err=$(python3 -c 'import torch, transformers' 2>&1); then
  echo "1..0 # SKIP python3 cannot import torch and transformers (${err##*$'\n'})"
  exit 0
fi
. "${ND_SRCDIR:-.}/tests/tap.sh"

python3 -c "
import random
random.seed(7)
words = 'the a cat dog ran sat on mat and then home big small red blue tale once upon time there was'.split()
open('$tmp/data.txt', 'w').write(' '.join(random.choice(words) for _ in range(40000)))"
common=(--set parallelism.pipeline_parallel_size=1 --set data.train="$tmp/data.txt" --set data.val="$tmp/data.txt"
        --set train.eval_every=0 --set log.every=1 --set train.lr=3e-3 --set train.warmup_steps=20)
"$ndgraph" run "$srcdir/configs/quickstart.yaml" "${common[@]}" --set train.steps=1 --set train.lr=1e-30 \
  --set train.save_dir="$tmp/init" >"$tmp/init.out" 2>&1
ok $? "the initial weights are saved"
"$ndgraph" run "$srcdir/configs/quickstart.yaml" "${common[@]}" --set train.steps=3 --set train.precision=bf16 \
  --set train.save_dir= --metrics "$tmp/bf16.jsonl" >"$tmp/bf16.out" 2>&1
ok $? "ndgraph trains 3 steps in bf16"
# the quick start's global batch: micro_batches 4 x micro_batch_size 4
python3 "$srcdir/tests/bf16_autocast_ref.py" "$tmp/init/step-1" "$tmp/data.txt" "$tmp/bf16.jsonl" 3 16 3e-3 20 \
  >"$tmp/ref.out" 2>"$tmp/ref.err"
rc=$?
sed 's/^/# /' "$tmp/ref.out"
[ $rc -eq 0 ] || grep -v "Loading weights" "$tmp/ref.err" | tail -3 | sed 's/^/# /'
ok $rc "PyTorch autocast bf16 gives ndgraph's bf16 losses of 3 steps within 1e-3 relative"
done_testing
