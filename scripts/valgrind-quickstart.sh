#!/usr/bin/env bash
# A short quick-start run under valgrind's leak checker: exits non-zero if
# valgrind finds a definite or indirect leak, or any memory error. The run is
# the quick-start model cut to two steps of two small micro-batches on one
# worker (idle StarPU workers spin, which valgrind serializes), with an
# evaluation and a checkpoint, so every path of a run is covered.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d /tmp/ndgraph-valgrind-XXXXXX)
trap 'rm -rf "$out"' EXIT
# libtool's wrapper script would be what valgrind runs: run the real binary
# (--trace-children: where ndgraph re-executes itself for OpenBLAS's kernels,
# README *Dependencies*, the run that follows is the one checked)
bin="$top/.libs/ndgraph"
[ -x "$bin" ] || bin="$top/ndgraph"
LD_LIBRARY_PATH="$top/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" STARPU_SILENT=1 \
  valgrind --trace-children=yes --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
  --error-exitcode=3 --suppressions="$top/scripts/valgrind.supp" \
  "$bin" run "$top/configs/quickstart.yaml" --set train.steps=2 --set train.eval_every=2 \
  --set train.eval_batches=1 --set train.save_dir="$out/ck" --metrics "$out/m.jsonl" \
  --set runtime.workers=1 --set parallelism.micro_batches=2 --set train.micro_batch_size=1
echo "valgrind: no leak and no memory error in a quick-start run"
