#!/bin/sh
# kernel-check on a plugin with a CUDA kernel (examples/plugins/cuda_add.cu):
# the residual add's CPU and CUDA implementations each against ndgraph's
# reference, on the first CUDA device. Skipped, with the reason, in builds
# without CUDA or where no CUDA device exists (kernel-check then exits 2:
# "no CUDA device"). Speaks TAP.
B=${ND_BUILDDIR:-.}
ND="$B/ndgraph"
PL="$B/examples/plugins/.libs/libcuda_add.so"
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
if ! grep -q "define ND_HAVE_CUDA 1" "$B/ndconfig.h"; then
  echo "ok 1 # SKIP kernel-check on CUDA (this build has no CUDA)"
  echo "1..1"
  exit 0
fi
$ND kernel-check "$PL" cuda_add >"$TMP/out" 2>"$TMP/err"
st=$?
sed 's/^/# /' "$TMP/out" "$TMP/err"
n_cpu=$(grep -c "^residual_fwd cuda_add (n [0-9]*): rel err .* vs fp64: ok$" "$TMP/out")
if [ $st -eq 2 ] && grep -q "no CUDA device" "$TMP/err"; then
  if [ "$n_cpu" -eq 3 ]; then
    echo "ok 1 - kernel-check passes the plugin's residual add on the CPU, 3 shapes, before the CUDA part"
  else
    echo "not ok 1 - kernel-check passes the plugin's residual add on the CPU ($n_cpu of 3 cases ok)"
  fi
  echo "ok 2 # SKIP kernel-check on CUDA: $(cat "$TMP/err")"
  echo "1..2"
  exit 0
fi
n_cuda=$(grep -c "^residual_fwd cuda_add (n [0-9]*) on cuda: rel err .* vs fp64: ok$" "$TMP/out")
if [ $st -eq 0 ] && [ "$n_cpu" -eq 3 ] && grep -q "kernel-check cuda_add .*PASS" "$TMP/out"; then
  echo "ok 1 - kernel-check passes the plugin's residual add on the CPU, 3 shapes"
else
  echo "not ok 1 - kernel-check passes the plugin's residual add on the CPU (exit $st, $n_cpu cases ok)"
fi
if [ $st -eq 0 ] && [ "$n_cuda" -eq 3 ]; then
  echo "ok 2 - kernel-check passes the plugin's residual add on CUDA, 3 shapes"
else
  echo "not ok 2 - kernel-check passes the plugin's residual add on CUDA (exit $st, $n_cuda CUDA cases ok)"
fi
echo "1..2"
