#!/usr/bin/env bash
# What the build has and what it refuses: `ndgraph --version`, CPU workers
# beyond Debian's cap of 4, runtime.cuda_devices on a machine without a GPU
# (one line, exit 2), and the plan's NVLink/PCIe bytes on a GPU topology.
. "${ND_SRCDIR:-.}/tests/tap.sh"

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.micro_batch_size=2 --set parallelism.micro_batches=2 --set train.steps=1 --set train.eval_every=0
      --set train.save_dir=)

"$ndgraph" --version >"$tmp/version"
grep -qx "ndgraph [0-9.]*" "$tmp/version" && grep -qx "StarPU 1\.[0-9]*\.[0-9]*" "$tmp/version" &&
  grep -qxE "CUDA (yes|no), OpenCL (yes|no), MPI (yes|no), max CPU workers [0-9]+" "$tmp/version"
ok $? "--version: ndgraph's version, StarPU's, CUDA/OpenCL/MPI and max CPU workers"
sed 's/^/# /' "$tmp/version"
cuda=$(grep -q "define ND_HAVE_CUDA 1" "${ND_BUILDDIR:-.}/ndconfig.h" && echo yes || echo no)
grep -q "^CUDA $cuda," "$tmp/version"; ok $? "--version says CUDA $cuda, as configure decided"
max=$(sed -n 's/.*max CPU workers \([0-9]*\)$/\1/p' "$tmp/version")

# a GPU-less machine (and a build without CUDA) refuses CUDA devices
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  ok 0 "# SKIP runtime.cuda_devices refused without a GPU (this machine has one)"
else
  expect 2 "runtime.cuda_devices 1: no CUDA device" "runtime.cuda_devices=1 without a GPU: 'no CUDA device', one line, exit 2" -- \
    "$ndgraph" run "${tiny[@]}" --set runtime.workers=1 --set runtime.cuda_devices=1
fi
expect 2 "runtime.cuda_devices.*expected 0..64 or 'all'" "runtime.cuda_devices=65: out of range, one line, exit 2" -- \
  "$ndgraph" plan "${tiny[@]}" --set runtime.cuda_devices=65
"$ndgraph" plan "${tiny[@]}" --set runtime.cuda_devices=all >/dev/null 2>"$tmp/err"
ok $? "runtime.cuda_devices=all is accepted $(head -c 200 "$tmp/err")"

# more CPU workers than Debian's StarPU starts (4): oversubscribed on a small machine, one step
if [ "${max:-0}" -lt 8 ]; then
  ok 0 "# SKIP runtime.workers=8 (this StarPU starts at most ${max:-?} CPU workers: build ours, scripts/build-starpu.sh)"
else
  STARPU_WORKERS_NOBIND=1 "$ndgraph" run "${tiny[@]}" --set runtime.workers=8 >"$tmp/out" 2>"$tmp/err"
  grep -qE "\| 8 CPU workers[ ,]" "$tmp/out"
  ok $? "runtime.workers=8 starts 8 CPU workers: $(head -1 "$tmp/out" | sed 's/.*| //') $(head -c 200 "$tmp/err")"
fi

# the plan on an 8-GPU topology: ranks on GPUs, and which bytes cross NVLink and which PCIe
topo="$srcdir/tests/topologies/gpu8-nvlink2x4.xml"
"$ndgraph" plan "${tiny[@]}" --set runtime.topology="$topo" --set parallelism.pipeline_parallel_size=2 \
  --set parallelism.data_parallel_size=4 >"$tmp/plan" 2>&1
grep -q "rank d0p0t0 -> workers 0 devices cuda0@" "$tmp/plan"
ok $? "plan: rank d0p0t0 on GPU cuda0 of the topology"
links=$(grep "^links:" "$tmp/plan")
nv=$(sed -n 's/^links: \([0-9]*\) bytes per step over NVLink.*/\1/p' <<<"$links")
pcie=$(sed -n 's/.*MiB), \([0-9]*\) over PCIe.*/\1/p' <<<"$links")
total=$(sed -n 's/^memory nodes: \([0-9]*\) bytes.*/\1/p' "$tmp/plan")
# neighbouring stages share an NVLink group; the data-parallel all-reduce crosses groups
[ -n "$nv" ] && [ -n "$pcie" ] && [ "$nv" -gt 0 ] && [ "$pcie" -gt 0 ] && [ $((nv + pcie)) -eq "$total" ]
ok $? "plan: NVLink and PCIe bytes, both > 0, add up to the bytes crossing memory nodes ($links)"
done_testing
