#!/usr/bin/env bash
# Data-parallel bytes against a ring all-reduce's (docs/nodes.md, The order
# of cross-process sums), from plan --nodes alone (no run): every process
# of GPT-2 small at dp P on P processes, and process 5 of the GPT-3-class
# layout on 128 processes (its share built alone), sends at most 1.05 times
# a ring's 2 (P - 1) / P of its gradients over its data-parallel group.
. "${ND_SRCDIR:-.}/tests/tap.sh"

cfg="$srcdir/configs/quickstart.yaml"

# within OUT N: N processes' data-parallel lines, each at most 1.05 x its ring
within() {
  python3 - "$1" "$2" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
dp = [(float(a), float(b)) for a, b in
      re.findall(r"data-parallel: sends ([\d.]+) MB, a ring over its group of \d+: ([\d.]+) MB", t)]
print(f"# data-parallel MB sent against a ring's: {dp[:3]}{' ...' if len(dp) > 3 else ''}")
sys.exit(0 if len(dp) == int(sys.argv[2]) and all(b > 0 and a <= 1.05 * b for a, b in dp) else 1)
PY
}

gpt2=(--set model.n_layer=12 --set model.n_embd=768 --set model.n_head=12 --set model.vocab_size=50257
  --set model.seq_len=1024 --set parallelism.pipeline_parallel_size=1 --set parallelism.tensor_parallel_size=1)
for n in 2 4 8; do
  "$ndgraph" plan "$cfg" "${gpt2[@]}" --set parallelism.data_parallel_size=$n --nodes $n >"$tmp/gpt2.out" 2>&1
  st=$?
  [ $st -eq 0 ] && within "$tmp/gpt2.out" $n
  ok $? "GPT-2 small, dp $n on $n processes: every process sends at most 1.05 x a ring's data-parallel bytes"
done

# GPT-3-class: dp 8 x tp 8 x pp 16 = 1024 ranks on 128 processes of 8 ranks
gpt3=(--set model.vocab_size=50304 --set model.n_layer=96 --set model.n_head=32 --set model.n_embd=4096
  --set model.seq_len=2048 --set parallelism.data_parallel_size=8 --set parallelism.tensor_parallel_size=8
  --set parallelism.pipeline_parallel_size=16 --set parallelism.micro_batches=64 --set parallelism.activation_slots=16
  --set train.micro_batch_size=1)
"$ndgraph" plan "$cfg" "${gpt3[@]}" --nodes 128 --process 5 >"$tmp/gpt3.out" 2>&1
st=$?
[ $st -eq 0 ] && within "$tmp/gpt3.out" 1 && grep -q "a ring over its group of 8:" "$tmp/gpt3.out"
ok $? "GPT-3-class layout, process 5 of 128: at most 1.05 x a ring's data-parallel bytes over its group of 8"
done_testing
