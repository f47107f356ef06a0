#!/usr/bin/env bash
# A Llama checkpoint written by ndgraph, read by an independent implementation
# that builds the model from config.json alone (tests/hf_llama_ref.py in plain
# Python, or the program ND_LLAMA_REF names: tests/test_torch_llama.sh runs
# these checks with tests/torch_llama_ref.py), gives the loss `ndgraph eval`
# gives on the same tokens, within 1e-5 relative: with grouped-query attention
# and an untied head, and with a tied head. And the other way: the checkpoint
# rewritten by that program as Hugging Face writes large models (bf16, two
# shards and model.safetensors.index.json) loads in ndgraph, which converts it
# to fp32 (the same loss as the reference on the bf16 weights), and fine-tunes
# from it. With Llama 3's RoPE scaling (its three regimes met: pair 0 of a
# head of 8 kept, 1 blended, 2 and 3 stretched), the reference built from
# config.json's rope_parameters gives ndgraph's loss too.
. "${ND_SRCDIR:-.}/tests/tap.sh"
prog="$srcdir/tests/${ND_LLAMA_REF:-hf_llama_ref.py}"
diag "reference: $prog"
reference() { python3 "$prog" "$@" 2>"$tmp/referr"; }
comments() { sed 's/^#* */# /' "$tmp/referr"; } # what the reference last said on stderr
same() { # same EVAL_JSON REF_LOSS [TOLERANCE]: within 1e-5 relative, or TOLERANCE
  python3 -c "import json,sys; a=json.loads(sys.argv[1])['loss']; b=float(sys.argv[2]); print(f'# ndgraph {a!r}, reference {b!r}'); sys.exit(0 if abs(a-b) <= float(sys.argv[3])*abs(b) else 1)" "$1" "$2" "${3:-1e-5}"
}

printf 'Once upon a time, a small llama' >"$tmp/data.txt"
for tie in false true; do
  set -- --set model.arch=llama --set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 \
    --set model.n_kv_head=2 --set model.seq_len=16 --set model.intermediate_size=48 \
    --set model.tie_word_embeddings=$tie --set parallelism.pipeline_parallel_size=1 \
    --set train.micro_batch_size=1 --set runtime.workers=2
  "$ndgraph" run "$@" --set train.steps=3 --set train.eval_every=0 --set train.save_dir="$tmp/$tie" >"$tmp/out" 2>&1
  ok $? "tie_word_embeddings $tie: trains 3 steps and saves"
  ev=$("$ndgraph" eval "$@" --checkpoint "$tmp/$tie/step-3" --data "$tmp/data.txt" --batches 1 2>&1)
  ref=$(reference "$tmp/$tie/step-3" "$tmp/data.txt" 16)
  comments
  same "$ev" "$ref"
  ok $? "tie_word_embeddings $tie: the reference built from config.json gives ndgraph's loss within 1e-5 ($ev vs $ref)"
done

reference --shard-bf16 "$tmp/false/step-3" "$tmp/bf16"
status=$?
comments
ok $status "the reference rewrites the checkpoint as bf16 shards with an index"
ev=$("$ndgraph" eval "$@" --set model.tie_word_embeddings=false --checkpoint "$tmp/bf16" --data "$tmp/data.txt" \
  --batches 1 2>&1)
ref=$(reference "$tmp/bf16" "$tmp/data.txt" 16)
comments
same "$ev" "$ref"
ok $? "ndgraph reads the bf16 shards as the reference does ($ev vs $ref)"
"$ndgraph" run "$@" --set model.tie_word_embeddings=false --resume "$tmp/bf16" --set train.steps=3 \
  --set train.eval_every=0 --set train.save_dir="$tmp/ft" >"$tmp/out" 2>&1
ok $? "ndgraph fine-tunes from the bf16 shards"
test -f "$tmp/ft/step-3/model.safetensors" && grep -q '"F32"' "$tmp/ft/step-3/model.safetensors"
ok $? "and saves fp32"
llama3=(--set model.rope_factor=8 --set model.rope_low_freq_factor=1 --set model.rope_high_freq_factor=4
        --set model.rope_original_context=64)
"$ndgraph" run "$@" --set model.tie_word_embeddings=false "${llama3[@]}" --set train.steps=3 --set train.eval_every=0 \
  --set train.save_dir="$tmp/llama3" >"$tmp/out" 2>&1
ok $? "llama3 RoPE scaling: trains 3 steps and saves"
ev=$("$ndgraph" eval "$@" --set model.tie_word_embeddings=false "${llama3[@]}" --checkpoint "$tmp/llama3" \
  --data "$tmp/data.txt" --batches 1 2>&1)
ref=$(reference "$tmp/llama3/step-3" "$tmp/data.txt" 16)
comments
# after 3 steps the scaling moves the loss by about 3e-6 relative: 1e-6 tells them apart
same "$ev" "$ref" 1e-6
ok $? "llama3 RoPE scaling: the reference built from config.json gives ndgraph's loss within 1e-6 ($ev vs $ref)"
cp -r "$tmp/llama3/step-3" "$tmp/unscaled"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['rope_parameters']=dict(rope_type='default', rope_theta=10000.0); c['rope_scaling']=None; json.dump(c, open(sys.argv[1], 'w'))" "$tmp/unscaled/config.json"
plain=$(reference "$tmp/unscaled" "$tmp/data.txt" 16)
comments
! same "$ev" "$plain" 1e-6
ok $? "which the reference without the scaling does not ($plain)"
ev=$("$ndgraph" eval "$@" --set model.tie_word_embeddings=false --checkpoint "$tmp/llama3" --data "$tmp/data.txt" \
  --batches 1 2>&1)
status=$?
[ $status -eq 1 ] && [[ "$ev" == *"rope_parameters.factor is 8, the configuration has model.rope_factor 1"* ]]
ok $? "and a configuration without the scaling refuses it, naming the field (exit $status: $ev)"
done_testing
