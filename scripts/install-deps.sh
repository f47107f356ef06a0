#!/usr/bin/env bash
# Installs, idempotently, every Debian package ndgraph needs to build, test and
# benchmark, then builds ndgraph's own StarPU (scripts/build-starpu.sh; Debian's
# libstarpu-dev is not needed). Safe to run again: packages already present
# are skipped, and an up-to-date StarPU build takes seconds.
set -euo pipefail

packages=(
  build-essential autoconf automake libtool pkg-config
  dpkg-dev patch libopenmpi-dev libhwloc-dev hwloc libyaml-dev libopenblas-dev libcjson-dev libpcre2-dev
  ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev valgrind python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

bash "$(dirname "$0")/build-starpu.sh"
