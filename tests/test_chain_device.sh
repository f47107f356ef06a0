#!/usr/bin/env bash
# Chains on a device worker (tasks/chain.h): with one CPU worker and one
# OpenCL device, each holding a pipeline stage (strict placement), the
# device's layers run as chains too: fewer StarPU tasks per step than every
# task alone, and the same bits (a chain runs its members' kernels, in
# order, on the worker that would have run them one by one). Skipped
# without an OpenCL device.
. "${ND_SRCDIR:-.}/tests/tap.sh"
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
  --set train.micro_batch_size=2 --set parallelism.micro_batches=2 --set parallelism.pipeline_parallel_size=2
  --set train.steps=3 --set train.eval_every=0 --set train.save_dir= --set log.every=1 --set runtime.workers=1
  --set runtime.opencl_devices=1 --set runtime.placement=strict --set runtime.tune=false)

if ! grep -q "define ND_HAVE_OPENCL 1" "${ND_BUILDDIR:-.}/ndconfig.h" ||
  ! "$ndgraph" run "${tiny[@]}" --set train.steps=1 >"$tmp/probe" 2>&1; then
  ok 0 "# SKIP no OpenCL device: $(tail -1 "$tmp/probe" 2>/dev/null)"
  done_testing
  exit 0
fi
for chains in true false; do
  "$ndgraph" run "${tiny[@]}" --set runtime.chain_tasks=$chains --metrics "$tmp/$chains.jsonl" >"$tmp/$chains.out" 2>&1
  ok $? "chain_tasks $chains: runs on a CPU worker and an OpenCL device"
done
python3 - "$tmp/true.jsonl" "$tmp/false.jsonl" <<'PY'
import json, sys
a, b = ([l for l in map(json.loads, open(p)) if "loss" in l] for p in sys.argv[1:3])
same = [(l["loss"], l["grad_norm"]) for l in a] == [(l["loss"], l["grad_norm"]) for l in b] and len(a) == 3
print(f"# losses chained {[l['loss'] for l in a]}, alone {[l['loss'] for l in b]}")
sys.exit(0 if same else 1)
PY
ok $? "chained and alone: the same losses and gradient norms, bit for bit"
python3 - "$tmp/true.jsonl" "$tmp/false.jsonl" <<'PY'
import json, sys
n = [[l["tasks_submitted"][0] for l in map(json.loads, open(p)) if "loss" in l][-1] for p in sys.argv[1:3]]
print(f"# StarPU tasks per step: chained {n[0]}, alone {n[1]}")
sys.exit(0 if n[0] * 2 < n[1] else 1)
PY
ok $? "chained: fewer than half the StarPU tasks of every task alone, the device's stage included"
done_testing
