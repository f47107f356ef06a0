#!/usr/bin/env bash
# train.sample_every (docs/generate.md): `ndgraph run` prints a greedy sample
# every N steps from the first ids of data.val; the training's bits are those
# of the run without samples; each sample is what `ndgraph generate` gives
# from that step's checkpoint; hostile values and mpirun are one line and exit 2.
. "${ND_SRCDIR:-.}/tests/tap.sh"
# a vocabulary of 300 on text data: the sample is printed as ids
common=(--set model.vocab_size=300 --set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=32
  --set parallelism.pipeline_parallel_size=2 --set parallelism.micro_batches=2 --set train.micro_batch_size=2
  --set runtime.workers=2 --set runtime.tune=false --set train.steps=6 --set train.eval_every=3 --set log.every=1
  --set data.val="$tmp/val.txt")
for _ in 1 2 3; do printf 'Once upon a time a fox sang to the moon. '; done >"$tmp/val.txt"
prompt=$(head -c 16 "$tmp/val.txt" | od -An -tu1 | xargs | tr ' ' ',')

"$ndgraph" run "${common[@]}" --set train.save_dir= --metrics "$tmp/plain.jsonl" >"$tmp/plain" 2>&1
ok $? "a run without samples"
"$ndgraph" run "${common[@]}" --set train.sample_every=2 --set train.sample_tokens=8 --set train.save_every=2 \
  --set train.save_dir="$tmp/save" --metrics "$tmp/sampled.jsonl" >"$tmp/sampled" 2>&1
ok $? "the same run with a sample every 2 steps"
# the figures that depend on the bits, not on time
timed='step_ms|tokens_per_s|gflops|rss_peak_bytes|tensor_bytes|rank_tensor_bytes_peak|device_tensor_bytes_peak|submit_ms'
bits() { sed -E "s/\"($timed)\": [^,}]*//g" "$1"; }
[ "$(grep -c '"loss"' "$tmp/plain.jsonl")" = 6 ] && [ "$(grep -c val_loss "$tmp/plain.jsonl")" = 2 ] &&
  [ "$(bits "$tmp/plain.jsonl")" = "$(bits "$tmp/sampled.jsonl")" ]
ok $? "losses, gradient norms and validation losses are the same bits with and without samples"
grep -q "^sample: every 2 steps, 8 greedy ids after the first 16 of $tmp/val.txt: ${prompt//,/ } \$" "$tmp/sampled"
ok $? "the prompt is said once: the first 16 ids of data.val ($(grep '^sample:' "$tmp/sampled"))"
[ "$(grep -c '^step  *[0-9]* | sample: ' "$tmp/sampled")" = 3 ] && ! grep -q '| sample' "$tmp/plain"
ok $? "a sample after steps 2, 4 and 6, none when train.sample_every is 0"
for step in 2 4 6; do
  got=$(sed -n "s/^step  *$step | sample: //p" "$tmp/sampled")
  want=$("$ndgraph" generate "${common[@]}" --checkpoint "$tmp/save/step-$step" --prompt-ids "$prompt" --tokens 8 \
    --temperature 0 2>/dev/null)
  [ "$(echo $got | wc -w)" = 8 ] && [ "$(echo $got)" = "$(echo $want)" ]
  ok $? "step $step: the sample is generate's greedy ids from that step's checkpoint ($got | $want)"
done

for v in -1 abc 1e20 2.5; do
  expect 2 "train.sample_every: .*(out of range|expected an integer)" "train.sample_every=$v" -- \
    "$ndgraph" run "${common[@]}" --set train.sample_every=$v
done
for v in 0 -3 x 70000; do
  expect 2 "train.sample_tokens: .*(out of range|expected an integer)" "train.sample_tokens=$v" -- \
    "$ndgraph" run "${common[@]}" --set train.sample_every=1 --set train.sample_tokens=$v
done
expect 2 "train.sample_tokens \(32\) must be below model.seq_len \(32\)" "a sample with no room for its prompt" -- \
  "$ndgraph" run "${common[@]}" --set train.sample_every=1 --set train.sample_tokens=32
expect 2 "train.sample_every: samples run in one process; under mpirun \(2 processes\)" "under mpirun" -- \
  env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 "$ndgraph" run "${common[@]}" --set train.sample_every=1 \
    --set train.sample_tokens=8
done_testing
