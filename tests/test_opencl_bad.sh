#!/usr/bin/env bash
# OpenCL requests that cannot be met: one line, exit status 2. In a build with
# OpenCL, more devices than exist; in a build without, any device at all.
. "${ND_SRCDIR:-.}/tests/tap.sh"

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.micro_batch_size=2 --set parallelism.micro_batches=2 --set train.steps=1 --set train.eval_every=0
      --set train.save_dir= --set runtime.workers=1)

if grep -q "define ND_HAVE_OPENCL 1" "${ND_BUILDDIR:-.}/ndconfig.h"; then
  expect 2 "runtime.opencl_devices 64: only [0-9]+ OpenCL devices? found" "more OpenCL devices than exist: one line, exit 2" -- \
    "$ndgraph" run "${tiny[@]}" --set runtime.opencl_devices=64
  ok 0 "# SKIP a build without OpenCL refuses OpenCL devices (this build has OpenCL)"
else
  ok 0 "# SKIP more OpenCL devices than exist (this build has no OpenCL)"
  expect 2 "runtime.opencl_devices 1: no OpenCL device: this ndgraph was built without OpenCL" "a build without OpenCL refuses OpenCL devices: one line, exit 2" -- \
    "$ndgraph" run "${tiny[@]}" --set runtime.opencl_devices=1
fi
# the plan needs no device: it shows where each rank would run and what crosses memory nodes
"$ndgraph" plan "${tiny[@]}" --set parallelism.pipeline_parallel_size=2 --set runtime.opencl_devices=1 >"$tmp/plan" 2>&1
grep -q "rank d0p0t0 -> workers 0 devices cpu:core0 (memory node 0)" "$tmp/plan" &&
  grep -q "rank d0p1t0 -> workers 1 devices opencl0 (memory node 1)" "$tmp/plan" &&
  grep -qE "^memory nodes: [1-9][0-9]* bytes per step cross between memory nodes" "$tmp/plan"
ok $? "plan: one rank on the CPU worker, one on the OpenCL device, bytes crossing memory nodes"
done_testing
