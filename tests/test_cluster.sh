#!/usr/bin/env bash
# plan --cluster: a cluster file that is no cluster description (a missing
# field, a negative bandwidth, an unknown GPU field, an unknown attention, a
# dropout above 1, a directory, a missing file) is bad input: one line naming
# the file and the problem, exit 2; a good one prints the layout's simulated
# step, longer with Megatron-LM's software section; bench/megatron's rows run.
. "${ND_SRCDIR:-.}/tests/tap.sh"

a100="$srcdir/configs/clusters/dgx-a100.yaml"
small=(--set model.n_layer=4 --set model.n_embd=256 --set model.n_head=4 --set model.seq_len=128
       --set parallelism.pipeline_parallel_size=2 --set parallelism.micro_batches=4 --set parallelism.data_parallel_size=2)
grep -v 'hbm_gbs' "$a100" >"$tmp/missing.yaml"
sed 's/^  gbs: 192$/  gbs: -192/' "$a100" >"$tmp/negative.yaml"
sed 's/^  hbm_gib: 80 /  hbm_gib: 80\n  tensor_cores: 432/' "$a100" >"$tmp/unknown.yaml"
mkdir "$tmp/dir.yaml"
{ cat "$a100"; printf 'software:\n  attention: flash\n'; } >"$tmp/choice.yaml"
{ cat "$a100"; printf 'software:\n  dropout: 1.5\n'; } >"$tmp/dropout.yaml"
{ cat "$a100"; printf 'software:\n  attention: unfused\n  dropout: 0.1\n  grad_allreduce_bytes: 2\n'; } >"$tmp/megatron.yaml"
expect 2 "^ndgraph: $tmp/missing.yaml(:[0-9]+)?: gpu.hbm_gbs is missing" "a missing field: one line, exit 2" -- \
  "$ndgraph" plan "${small[@]}" --cluster "$tmp/missing.yaml"
expect 2 "^ndgraph: $tmp/negative.yaml:[0-9]+: inter_node.gbs must be a positive number" \
  "a negative bandwidth: one line, exit 2" -- "$ndgraph" plan "${small[@]}" --cluster "$tmp/negative.yaml"
expect 2 "^ndgraph: $tmp/unknown.yaml:[0-9]+: gpu.tensor_cores: unknown field" "an unknown GPU field: one line, exit 2" -- \
  "$ndgraph" plan "${small[@]}" --cluster "$tmp/unknown.yaml"
expect 2 "^ndgraph: $tmp/choice.yaml:[0-9]+: software.attention must be one of fused\|unfused" \
  "an unknown attention: one line, exit 2" -- "$ndgraph" plan "${small[@]}" --cluster "$tmp/choice.yaml"
expect 2 "^ndgraph: $tmp/dropout.yaml:[0-9]+: software.dropout must be a non-negative number at most 0.99" \
  "a dropout above 1: one line, exit 2" -- "$ndgraph" plan "${small[@]}" --cluster "$tmp/dropout.yaml"
expect 2 "^ndgraph: $tmp/dir.yaml: not a regular file" "a directory: one line, exit 2" -- \
  "$ndgraph" plan "${small[@]}" --cluster "$tmp/dir.yaml"
expect 2 "^ndgraph: $tmp/none.yaml: " "no such file: one line, exit 2" -- \
  "$ndgraph" plan "${small[@]}" --cluster "$tmp/none.yaml"
expect 2 "^ndgraph: --cluster " "--cluster with --calibration: refused" -- \
  "$ndgraph" plan --auto "${small[@]}" --cluster "$a100" --calibration "$srcdir/configs/calibration-8gpu.json"

"$ndgraph" plan "${small[@]}" --cluster "$a100" >"$tmp/out" 2>&1
ok $? "plan --cluster runs"
grep -qE '^  step [0-9.]+ s \(pipeline' "$tmp/out" && grep -qE 'model TFLOP/s per GPU' "$tmp/out"
ok $? "it prints the step, tokens/s and model TFLOP/s per GPU"
"$ndgraph" plan "${small[@]}" --cluster "$tmp/megatron.yaml" >"$tmp/meg" 2>&1
ok $? "plan --cluster with a software section (unfused attention, dropout, fp16 gradients) runs"
step() { sed -n 's/^  step \([0-9.]*\) s.*/\1/p' "$1"; }
awk -v a="$(step "$tmp/out")" -v b="$(step "$tmp/meg")" 'BEGIN { exit !(b > a) }'
ok $? "and its step is longer than ndgraph's own ($(step "$tmp/meg") s against $(step "$tmp/out") s)"
"$ndgraph" plan --auto "${small[@]}" --set model.n_layer=2 --cluster "$srcdir/configs/clusters/dgx-h100.yaml" \
  >"$tmp/auto" 2>&1
ok $? "plan --auto --cluster ranks layouts"
grep -qE '^ 1 +[0-9.]+ ' "$tmp/auto"
ok $? "its table has a first plan"

ND_SRCDIR="$srcdir" ND_BUILDDIR="${ND_BUILDDIR:-.}" "$srcdir/bench/megatron" 18.4B,145.6B >"$tmp/bench" 2>&1
ok $? "bench/megatron runs the 18.4B and 145.6B rows"
[ "$(grep -cE '^\| (18\.4|145\.6)B \| 8 \| [18] .* \| [0-9.]+ \| [0-9.]+ \| 1[34][58] \| [0-9.]+ \| [0-9.]+ \|$' "$tmp/bench")" -eq 2 ]
ok $? "with predicted (1F1B and ndws) and the published TFLOP/s per GPU each"
done_testing
