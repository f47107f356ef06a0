#!/usr/bin/env bash
# `ndgraph generate` (docs/generate.md) on tiny GPT-2 and Llama checkpoints,
# one rank and tensor-parallel 2: greedy decoding with the key/value cache
# gives, token for token, what the full forward over the whole sequence gives
# for each new token (generate --tokens 1 on the growing sequence: the
# prompt's forward from position 0, no cached step); seeded sampling repeats;
# hostile input is one line and exit 2.
. "${ND_SRCDIR:-.}/tests/tap.sh"
common=(--set model.vocab_size=300 --set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=32
  --set parallelism.pipeline_parallel_size=1 --set parallelism.micro_batches=1 --set train.micro_batch_size=2
  --set runtime.workers=2 --set runtime.tune=false)
gpt2=(--set model.arch=gpt2)
llama=(--set model.arch=llama --set model.n_kv_head=2 --set model.intermediate_size=48
  --set model.tie_word_embeddings=false)
prompt=79,110,99,101,32,117,112,111,110
for arch in gpt2 llama; do
  declare -n extra=$arch
  "$ndgraph" run "${common[@]}" "${extra[@]}" --set train.steps=1 --set train.lr=1e-9 --set train.eval_every=0 \
    --set train.save_dir="$tmp/$arch" >"$tmp/out" 2>&1
  ok $? "$arch: saves its initial weights, almost (one step at lr 1e-9: varied greedy ids; a vocabulary of 300: the output is ids)"
  for tp in 1 2; do
    set -- "${common[@]}" "${extra[@]}" --set parallelism.tensor_parallel_size=$tp --checkpoint "$tmp/$arch"
    cached=$("$ndgraph" generate "$@" --prompt-ids $prompt --tokens 12 --temperature 0 2>"$tmp/err" | tr -d '\n')
    ok $? "$arch tp $tp: greedy generation of 12 tokens"
    grep -q "tokens/s" "$tmp/err"
    ok $? "$arch tp $tp: a line of tokens/s ($(cat "$tmp/err"))"
    seq=$prompt full=""
    for _ in $(seq 12); do
      id=$("$ndgraph" generate "$@" --prompt-ids "$seq" --tokens 1 --temperature 0 2>/dev/null | tr -d ' \n')
      full="$full$id "
      seq="$seq,$id"
    done
    [ -n "$cached" ] && [ "$cached" = "$full" ]
    ok $? "$arch tp $tp: the cache's tokens are the full forward's ($cached | $full)"
    a=$("$ndgraph" generate "$@" --prompt-ids $prompt --tokens 12 --temperature 1.5 --top-k 20 --seed 7 2>/dev/null)
    b=$("$ndgraph" generate "$@" --prompt-ids $prompt --tokens 12 --temperature 1.5 --top-k 20 --seed 7 2>/dev/null)
    c=$("$ndgraph" generate "$@" --prompt-ids $prompt --tokens 12 --temperature 1.5 --top-k 20 --seed 8 2>/dev/null)
    [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ]
    ok $? "$arch tp $tp: a seed gives the same sample, another seed another ($a | $c)"
  done
done
# the tensor-parallel and single-rank greedy texts agree too
set -- "${common[@]}" "${gpt2[@]}" --checkpoint "$tmp/gpt2" --prompt-ids $prompt --tokens 12 --temperature 0
[ "$("$ndgraph" generate "$@" 2>/dev/null)" = "$("$ndgraph" generate "$@" --set parallelism.tensor_parallel_size=2 2>/dev/null)" ]
ok $? "gpt2: tp 2 generates what one rank does"

set -- "${common[@]}" "${gpt2[@]}"
expect 2 "nowhere.*cannot open" "a missing checkpoint" -- "$ndgraph" generate "$@" --checkpoint "$tmp/nowhere" --prompt x
expect 2 "needs --checkpoint" "no checkpoint" -- "$ndgraph" generate "$@" --prompt x
expect 2 "26 prompt tokens \\+ 10 new ones exceed the 32 positions" "a prompt and tokens past seq_len" -- \
  "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt-ids "$(seq -s, 1 26)" --tokens 10
expect 2 "--prompt-ids .*\\(at most 32\\)" "a prompt longer than seq_len" -- \
  "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt-ids "$(seq -s, 1 40)"
expect 2 "--prompt TEXT: model.vocab_size is not 256 and there is no tokenizer" "a text prompt without a tokenizer" -- \
  "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt x
expect 2 "prompt id 300 .*vocabulary of 300" "an id past the vocabulary" -- \
  "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt-ids 1,300 --tokens 4
expect 2 "--prompt-ids" "an id that is no number" -- "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt-ids 1,x
expect 2 "--tokens '0'" "zero tokens" -- "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt-ids 1 --tokens 0
for t in -1 nan inf 1e9 hot; do
  expect 2 "--temperature '$t'" "temperature $t" -- "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt-ids 1 --temperature $t
done
expect 2 "one of --prompt" "both prompts" -- "$ndgraph" generate "$@" --checkpoint "$tmp/gpt2" --prompt x --prompt-ids 1
done_testing
