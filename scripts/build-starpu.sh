#!/usr/bin/env bash
# Builds ndgraph's own StarPU from Debian 12's source package (Debian's binary
# caps CPU workers at 4 and has no CUDA): CPU, OpenCL, MPI, hwloc, and CUDA when
# nvcc is found, with the patches in scripts/starpu-patches/. Idempotent: a
# stamp in the prefix names the source version, the patches' hash and the
# options, and a second run with the same stamp returns at once.
#
# Environment: ND_STARPU_PREFIX (default /opt/ndgraph/starpu), ND_STARPU_WORK
# (build folder, default /var/tmp/ndgraph-starpu), CUDA_HOME (default
# /usr/local/cuda), ND_STARPU_CUDA=no to build without CUDA.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=1.3.10+dfsg-2
prefix=${ND_STARPU_PREFIX:-/opt/ndgraph/starpu}
work=${ND_STARPU_WORK:-/var/tmp/ndgraph-starpu}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
jobs=${ND_STARPU_JOBS:-$(nproc)}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

options=(--enable-maxcpus=256 --enable-maxcudadev=8 --disable-starpufft
  --disable-build-examples --disable-build-tests --disable-build-doc
  --disable-fortran --disable-socl --disable-static --disable-mpi-check)
if [ "${ND_STARPU_CUDA:-auto}" != no ] && [ -x "$cuda_home/bin/nvcc" ]; then
  options+=(--enable-cuda --with-cuda-dir="$cuda_home")
else
  options+=(--disable-cuda)
fi
command -v mpicc >/dev/null || { echo "build-starpu: mpicc not found: install libopenmpi-dev (scripts/install-deps.sh)" >&2; exit 1; }

patches_hash=$(cat "$here"/starpu-patches/*.patch | sha256sum | cut -c1-16)
stamp="starpu $version patches $patches_hash options ${options[*]}"
stamp_file=$prefix/.ndgraph-stamp

mkdir -p "$work"
exec 9>"$work/lock"
flock 9 # two builds at once (CI and a developer) would clobber each other

if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] &&
   [ -f "$prefix/lib/pkgconfig/starpu-1.3.pc" ]; then
  echo "build-starpu: $prefix is up to date ($version, patches $patches_hash)"
  exit 0
fi

start=$(date +%s)

# apt-get source needs a deb-src entry for bookworm main; add one if none.
if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "build-starpu: adding a deb-src entry for Debian bookworm main"
  $sudo tee /etc/apt/sources.list.d/ndgraph-deb-src.sources >/dev/null <<'EOF'
# Added by ndgraph's scripts/build-starpu.sh (apt-get source starpu).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  $sudo apt-get update -q
fi

src=$work/starpu-${version%-*}
rm -rf "$src" "$work/build"
# a deb-src entry whose lists were never fetched needs one update first
(cd "$work" && apt-get source -q "starpu=$version") ||
  { $sudo apt-get update -q && (cd "$work" && apt-get source -q "starpu=$version"); }
for p in "$here"/starpu-patches/*.patch; do
  echo "build-starpu: applying $(basename "$p"): $(head -1 "$p")"
  patch -d "$src" -p1 -s <"$p"
done

mkdir -p "$work/build"
cd "$work/build"
echo "build-starpu: configure ${options[*]}"
"$src/configure" --prefix="$prefix" "${options[@]}" >configure.log 2>&1 ||
  { tail -30 configure.log; echo "build-starpu: configure failed (log: $work/build/configure.log)" >&2; exit 1; }
make -j"$jobs" >make.log 2>&1 ||
  { tail -30 make.log; echo "build-starpu: build failed (log: $work/build/make.log)" >&2; exit 1; }
$sudo rm -rf "$prefix"
$sudo make install >install.log 2>&1 ||
  { tail -30 install.log; echo "build-starpu: install failed" >&2; exit 1; }
echo "$stamp" | $sudo tee "$stamp_file" >/dev/null

config=$prefix/include/starpu/1.3/starpu_config.h
has() { grep -q "^#define $1 1" "$config" && echo yes || echo no; }
echo "build-starpu: installed StarPU $version in $prefix in $(( $(date +%s) - start )) s:" \
  "CUDA $(has STARPU_USE_CUDA), OpenCL $(has STARPU_USE_OPENCL), MPI $( [ -f "$prefix/lib/pkgconfig/starpumpi-1.3.pc" ] && echo yes || echo no)," \
  "max CPUs $(sed -n 's/^#define STARPU_MAXCPUS \([0-9]*\)/\1/p' "$config")"
