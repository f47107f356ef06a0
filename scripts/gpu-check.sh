#!/usr/bin/env bash
# The GPU check (docs/cuda.md): run as is on a GPU machine that has the CUDA
# toolkit and nothing of ndgraph's Debian packages, from a checkout holding
# .gpu-bundle/ (scripts/gpu-bundle.sh, run first on a build machine). It
# unpacks the bundle into a private prefix (never into /), uses the bundled
# StarPU or rebuilds it from the bundled source when it does not load, builds
# ndgraph from the bundled tarball, runs the CUDA kernel checks and the
# PyTorch peer, and writes one Markdown table to $OUT/gpu-check.md (also
# printed). Rows that cannot run say why. Runs here too, as far as it can go.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${ND_GPU_BUNDLE:-$root/.gpu-bundle}
out=${OUT:-$root/gpu-check-out}
work=${ND_GPU_WORK:-/tmp/ndgraph-gpu}
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=$(nproc)
start=$(date +%s)
mkdir -p "$out"
table=$out/gpu-check.md
log=$out/gpu-check.log
: >"$log"
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3" | tee -a "$table"; }
fail() { row "$1" "failed" "$2 (log: gpu-check.log)"; finish; exit 1; }
finish() { row "gpu-check" "done" "$(( $(date +%s) - start )) s, $(date -u +%Y-%m-%dT%H:%MZ)"; }

printf '| check | result | note |\n|---|---|---|\n' >"$table"
[ -d "$bundle" ] || { echo "gpu-check: no bundle at $bundle: run scripts/gpu-bundle.sh on a build machine first" >&2; exit 2; }
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
row "GPU" "${gpu:-none}" "nvidia-smi; nvcc $("$cuda/bin/nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"

# 1. the Debian packages, unpacked into a prefix of ours
prefix=$work/root
rm -rf "$work" && mkdir -p "$prefix"
for d in "$bundle"/debs/*.deb; do
  if command -v dpkg >/dev/null; then dpkg -x "$d" "$prefix"
  else (t=$(mktemp -d) && cd "$t" && ar x "$d" && tar xf data.tar.* -C "$prefix" && rm -rf "$t"); fi
done >>"$log" 2>&1 || fail "unpack .deb files" "dpkg -x / ar"
arch_lib=$prefix/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread:$prefix/opt/ndgraph/starpu/lib:$cuda/lib64:$cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# .pc files name /usr and /opt/ndgraph/starpu: the sysroot puts them under our prefix
export PKG_CONFIG_SYSROOT_DIR=$prefix
export PKG_CONFIG_LIBDIR="$prefix/opt/ndgraph/starpu/lib/pkgconfig:$arch_lib/pkgconfig:$arch_lib/openblas-pthread/pkgconfig:$prefix/usr/share/pkgconfig"
pkgconf=$(command -v pkg-config || echo "$prefix/usr/bin/pkgconf")
export PKG_CONFIG=$pkgconf
ln -sf libopenblas.so.0 "$arch_lib/openblas-pthread/libopenblas.so" 2>/dev/null
ln -sf openblas-pthread/libopenblas.so.0 "$arch_lib/libopenblas.so.0" 2>/dev/null

# 2. StarPU: ours if it loads here, else rebuilt from the bundled source
mkdir -p "$prefix/opt/ndgraph"
cp -a "$bundle/starpu" "$prefix/opt/ndgraph/starpu"
if ldd "$prefix/opt/ndgraph/starpu/lib/libstarpu-1.3.so."* 2>&1 | grep -q "not found\|version .* not found"; then
  t0=$(date +%s)
  src=$work/starpu-src
  mkdir -p "$src" && tar xf "$bundle"/starpu-src/starpu_*.orig.tar.* -C "$src" --strip-components=1 &&
    for p in "$bundle"/starpu-src/patches/*.patch; do patch -d "$src" -p1 -s <"$p"; done &&
    (cd "$src" && ./configure --prefix="$prefix/opt/ndgraph/starpu" --enable-maxcpus=256 --enable-maxcudadev=8 \
       --disable-starpufft --disable-build-examples --disable-build-tests --disable-build-doc --disable-fortran \
       --disable-socl --disable-static --disable-mpi --enable-cuda --with-cuda-dir="$cuda" \
       CPPFLAGS="-I$prefix/usr/include" LDFLAGS="-L$arch_lib" && make -j"$jobs" && rm -rf "$prefix/opt/ndgraph/starpu" &&
       make install) >>"$log" 2>&1 || fail "StarPU" "the bundled one does not load and the rebuild failed"
  row "StarPU" "rebuilt here" "$(( $(date +%s) - t0 )) s (the bundled build does not load)"
else
  row "StarPU" "bundled build loads" "$(sed -n 's/^Version: //p' "$prefix/opt/ndgraph/starpu/lib/pkgconfig/starpu-1.3.pc")"
fi

# 3. ndgraph from its tarball: CUDA backend on, OpenCL off (no CLBlast there)
t0=$(date +%s)
tar xf "$bundle"/ndgraph-*.tar.xz -C "$work" && cd "$work"/ndgraph-*/ &&
  { ./configure --enable-werror --with-starpu="$prefix/opt/ndgraph/starpu" --with-cuda="$cuda" --without-opencl \
      CPPFLAGS="-I$prefix/usr/include" LDFLAGS="-L$arch_lib -L$arch_lib/openblas-pthread" &&
    make -j"$jobs"; } >>"$log" 2>&1 || fail "ndgraph build" "configure or make"
row "ndgraph build" "ok" "$(( $(date +%s) - t0 )) s; $(./ndgraph --version | tr '\n' ' ')"

# 4. the CUDA kernels against the CPU kernels, and what the build has
export STARPU_HOME=$work/starpu-home STARPU_SILENT=1
make -j"$jobs" check TESTS="tests/test_cuda_kernels tests/test_cuda_build.sh tests/test_cuda_config.sh" >>"$log" 2>&1
for t in tests/test_cuda_kernels tests/test_cuda_build.sh tests/test_cuda_config.sh; do
  [ -f "$t.log" ] || { row "$t" "not run" "no log"; continue; }
  p=$(grep -c "^PASS:" "$t.log"); f=$(grep -c "^FAIL:\|^ERROR:" "$t.log"); s=$(grep -c "^SKIP:" "$t.log")
  row "$t" "$p passed, $f failed, $s skipped" "$(grep -m1 "^# device" "$t.log" | sed 's/^# //')"
  grep "^FAIL:\|^SKIP:" "$t.log" | sed 's/^/    /' | head -20 | tee -a "$table"
done
cp tests/test_cuda_kernels.log "$out/" 2>/dev/null

# 5. training on the GPU, dp/tp/pp parity, NCCL: not part of the script yet
row "training, parity, NCCL, ndgraph benchmark" "not written yet" "docs/cuda.md, Not done yet"

# 6. the PyTorch peer and the GEMM peak, same GPU, same run
if command -v python3 >/dev/null; then
  timeout 300 python3 "$root/scripts/gpu_torch_bench.py" 2>>"$log" | tee -a "$table"
else
  row "PyTorch" "skipped" "no python3"
fi
finish
