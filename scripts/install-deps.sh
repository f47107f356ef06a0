#!/usr/bin/env bash
# Installs, idempotently, every Debian package ndgraph needs to build, test and benchmark.
# Safe to run again: packages already present are skipped by apt.
set -euo pipefail

packages=(
  build-essential autoconf automake libtool pkg-config
  libstarpu-dev libhwloc-dev hwloc libyaml-dev libopenblas-dev libcjson-dev
  ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev valgrind python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
