#!/usr/bin/env bash
# Packs, here, what a GPU machine without a package registry lacks to build
# and run ndgraph (docs/cuda.md, "GPU machine"): our StarPU (built with CUDA,
# stripped), the Debian packages of hwloc, libyaml, cJSON, OpenBLAS, PCRE2 and
# pkg-config as .deb files (unpacked there with dpkg -x, or ar + tar), the
# StarPU source package (to rebuild StarPU there if ours does not load), and
# ndgraph's source tarball (make dist: configure included, no autotools
# needed there). Writes .gpu-bundle/ (at most 64 MiB), which
# scripts/gpu-check.sh reads. Run after a build (./configure && make).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-.gpu-bundle}
starpu=${ND_STARPU_PREFIX:-/opt/ndgraph/starpu}
[ -f Makefile ] || { echo "gpu-bundle: run ./configure first" >&2; exit 2; }
[ -f "$starpu/lib/pkgconfig/starpu-1.3.pc" ] || { echo "gpu-bundle: no StarPU in $starpu (scripts/build-starpu.sh)" >&2; exit 2; }
grep -q "define STARPU_USE_CUDA 1" "$starpu/include/starpu/1.3/starpu_config.h" ||
  { echo "gpu-bundle: the StarPU in $starpu has no CUDA" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/debs" "$out/starpu-src"

# our StarPU, stripped; the GPU machine uses its own CUDA
cp -a "$starpu" "$out/starpu"
find "$out/starpu" -name '*.so*' -type f -exec strip --strip-unneeded {} +
rm -rf "$out/starpu/share/doc" "$out/starpu/bin"

# the Debian packages ndgraph builds and runs on (no registry there)
debs=(libhwloc15 libhwloc-dev libyaml-0-2 libyaml-dev libcjson1 libcjson-dev
      libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0 ocl-icd-libopencl1
      pkgconf pkgconf-bin libpkgconf3 libpcre2-8-0 libpcre2-dev libpcre2-16-0 libpcre2-32-0 libpcre2-posix3)
(cd "$out/debs" && apt-get download -q "${debs[@]}" >/dev/null)

# cuBLAS's and NCCL's headers: a machine whose CUDA toolkit came without
# them (their libraries from PyTorch's wheels) still builds against them
mkdir -p "$out/cuda-include"
cuda=${CUDA_HOME:-/usr/local/cuda}
cp "$cuda"/include/cublas*.h "$cuda"/include/nccl.h "$out/cuda-include/"

# StarPU's source package, with our patches, for a rebuild there
work=${ND_STARPU_WORK:-/var/tmp/ndgraph-starpu}
if ls "$work"/starpu_1.3.10+dfsg*.orig.tar.* >/dev/null 2>&1; then
  cp "$work"/starpu_1.3.10+dfsg* "$out/starpu-src/"
else
  (cd "$out/starpu-src" && apt-get source -q --download-only starpu=1.3.10+dfsg-2 >/dev/null)
fi
cp -r scripts/starpu-patches "$out/starpu-src/patches"

# ndgraph's sources with configure (the GPU machine has no autotools)
make dist >/dev/null
mv "ndgraph-$(sed -n 's/^PACKAGE_VERSION = //p' Makefile).tar.xz" "$out/"

size=$(du -sm "$out" | cut -f1)
echo "gpu-bundle: $out, ${size} MiB: $(ls "$out" | tr '\n' ' ')"
[ "$size" -le 64 ] || { echo "gpu-bundle: $out is over 64 MiB" >&2; exit 1; }
