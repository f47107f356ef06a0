#!/bin/sh
# kernel-check on a plugin with OpenCL kernels (examples/plugins/opencl_add.c):
# the residual add's CPU and OpenCL implementations each against ndgraph's
# reference, the SiLU's OpenCL kernels against its CPU ones, on a device
# (PoCL here). Skipped in builds without OpenCL or
# where no OpenCL device exists. Speaks TAP.
B=${ND_BUILDDIR:-.}
ND="$B/ndgraph"
PL="$B/examples/plugins/.libs/libopencl_add.so"
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
if ! grep -q "define ND_HAVE_OPENCL 1" "$B/ndconfig.h"; then
  echo "ok 1 # SKIP kernel-check on OpenCL (this build has no OpenCL)"
  echo "1..1"
  exit 0
fi
$ND kernel-check "$PL" ocl_add >"$TMP/out" 2>"$TMP/err"
st=$?
if [ $st -eq 2 ] && grep -q "no OpenCL device" "$TMP/err"; then
  echo "ok 1 # SKIP kernel-check on OpenCL: $(cat "$TMP/err")"
  echo "1..1"
  exit 0
fi
sed 's/^/# /' "$TMP/out" "$TMP/err"
n_cpu=$(grep -c "^residual_fwd ocl_add (n [0-9]*): rel err .* vs fp64: ok$" "$TMP/out")
n_ocl=$(grep -c "^residual_fwd ocl_add (n [0-9]*) on opencl: rel err .* vs fp64: ok$" "$TMP/out")
if [ $st -eq 0 ] && [ "$n_cpu" -eq 3 ] && [ "$n_ocl" -eq 3 ] && grep -q "kernel-check ocl_add .*PASS" "$TMP/out"; then
  echo "ok 1 - kernel-check passes the plugin's residual add on the CPU and on OpenCL, 3 shapes each"
else
  echo "not ok 1 - kernel-check passes the plugin's residual add on the CPU and on OpenCL (exit $st, $n_cpu CPU and $n_ocl OpenCL cases ok)"
fi
$ND kernel-check "$PL" silu_ocl >"$TMP/out" 2>"$TMP/err"
st=$?
sed 's/^/# /' "$TMP/out" "$TMP/err"
n_ocl=$(grep -c "^activation silu_ocl .* (n [0-9]*) on opencl: rel err .* vs cpu: ok$" "$TMP/out")
if [ $st -eq 0 ] && [ "$n_ocl" -eq 6 ] && grep -q "kernel-check silu_ocl .*PASS" "$TMP/out"; then
  echo "ok 2 - kernel-check passes the plugin's SiLU on OpenCL against its CPU kernels, forward and backward, 3 sizes"
else
  echo "not ok 2 - kernel-check passes the plugin's SiLU on OpenCL (exit $st, $n_ocl OpenCL cases ok)"
fi
echo "1..2"
