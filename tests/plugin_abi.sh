#!/bin/sh
# A plugin built against kernel ABI version 1 (the example plugin with
# ND_KERNEL_ABI_VERSION=1) still loads: kernel-check passes its kernels and
# a training uses them. Speaks TAP.
B=${ND_BUILDDIR:-.}
ND="$B/ndgraph"
V1="$B/tests/plugins/.libs/libexample_v1.so"
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
TINY="--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set model.vocab_size=256 --set runtime.workers=1 --set train.eval_every=0 --set train.save_dir="
$ND kernel-check "$V1" blocked >"$TMP/out" 2>&1
st=$?
if [ $st -eq 0 ] && grep -q "kernel-check blocked .*PASS" "$TMP/out"; then echo "ok 1 - kernel-check loads a version 1 plugin and passes its GEMM"
else sed 's/^/# /' "$TMP/out"; echo "not ok 1 - kernel-check loads a version 1 plugin (exit $st)"; fi
$ND run $TINY --set train.steps=2 --set "kernels.plugins=[$V1]" --set model.activation=silu >"$TMP/out" 2>&1
st=$?
if [ $st -eq 0 ] && grep -q "^step     2 | loss" "$TMP/out" && grep -q "activation_fwd=silu" "$TMP/out"; then
  echo "ok 2 - a training uses a version 1 plugin's activation"
else sed 's/^/# /' "$TMP/out"; echo "not ok 2 - a training uses a version 1 plugin's activation (exit $st)"; fi
echo "1..2"
