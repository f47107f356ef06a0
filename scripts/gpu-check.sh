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

# CUDA as ndgraph's configure expects it (DIR/include, DIR/lib64): the
# toolkit, plus cuBLAS and NCCL wherever this machine has them (a toolkit
# without them, PyTorch's wheels), headers from the bundle if none are found
find_one() { for d in "$cuda/lib64" "$cuda/lib" /usr/lib/x86_64-linux-gnu; do
    ls "$d/$1".* >/dev/null 2>&1 && { ls "$d/$1".* | head -1; return; }; done
  find /usr/local /opt /usr/lib -name "$1.*" 2>/dev/null | sort | head -1; }
cuda_dir=$work/cuda
mkdir -p "$cuda_dir/include" "$cuda_dir/lib64"
ln -s "$cuda/bin" "$cuda_dir/bin"
for f in "$cuda"/include/* "$cuda"/lib64/* "$cuda"/lib/*; do
  case $f in */include/*) ln -sf "$f" "$cuda_dir/include/" ;; *) ln -sf "$f" "$cuda_dir/lib64/" ;; esac
done 2>/dev/null
for h in "$bundle"/cuda-include/*.h; do
  [ -e "$cuda_dir/include/$(basename "$h")" ] || ln -s "$h" "$cuda_dir/include/"
done
for l in libcublas.so libcublasLt.so libnccl.so libcudart.so; do
  [ -e "$cuda_dir/lib64/$l" ] && continue
  found=$(find_one "$l")
  [ -n "$found" ] && ln -sf "$found" "$cuda_dir/lib64/$l" && ln -sf "$found" "$cuda_dir/lib64/$(basename "$found")"
  echo "gpu-check: $l -> ${found:-not found}" >>"$log"
done
cuda=$cuda_dir
export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread:$prefix/opt/ndgraph/starpu/lib:$cuda/lib64:$cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# .pc files name /usr and /opt/ndgraph/starpu: the sysroot puts them under our
# prefix (CUDA's folder too, which is why configure also gets it by hand)
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
      CPPFLAGS="-I$prefix/usr/include -isystem $cuda/include" LDFLAGS="-L$arch_lib -L$arch_lib/openblas-pthread" &&
    make -j"$jobs"; } >>"$log" 2>&1 || { cp config.log "$out/" 2>/dev/null; fail "ndgraph build" "configure or make"; }
row "ndgraph build" "ok" "$(( $(date +%s) - t0 )) s; $(./ndgraph --version | tr '\n' ' ')"

# 4. the CUDA tests: kernels against the CPU kernels, the mixed CPU + GPU
# node against the CPU single-rank reference, NCCL, what the build has;
# train.precision bf16's first (its kernels and a bf16 step on a GPU have
# never run), so a run cut short still has them
export STARPU_HOME=$work/starpu-home STARPU_SILENT=1
gpu_tests="tests/test_cuda_kernels tests/test_cuda_parity_bf16 tests/test_cuda_parity_llama_bf16"
gpu_tests="$gpu_tests tests/test_cuda_parity tests/test_cuda_build.sh tests/test_cuda_config.sh"
gpu_tests="$gpu_tests tests/test_cuda_parity_llama"
[ -f tests/test_cuda_nccl.c ] && gpu_tests="$gpu_tests tests/test_cuda_nccl"
# the Llama checkpoint against an independent PyTorch program (PyTorch is there)
gpu_tests="$gpu_tests tests/test_torch_llama.sh tests/plugin_cuda.sh"
timeout 200 make -j"$jobs" check TESTS="$gpu_tests" >>"$log" 2>&1
for t in $gpu_tests; do
  [ -f "$t.log" ] || { row "$t" "not run" "no log"; continue; }
  p=$(grep -c "^ok " "$t.log"); f=$(grep -c "^not ok " "$t.log"); s=$(grep -c "^ok .*# SKIP" "$t.log")
  row "$t" "$p ok ($s skipped), $f not ok" "$(grep -m1 "^# device" "$t.log" | sed 's/^# //')"
  grep "^not ok\|^ok .*# SKIP" "$t.log" | sed 's/^/    /' | head -20 | tee -a "$table"
  cp "$t.log" "$out/" 2>/dev/null
done

# 5. ndgraph on the GPU: the quick start, then GPT-2 small (12 layers, n_embd
# 768, seq_len 1024, vocab 50257, batch 8) in fp32, TF32 and bf16, and a Llama
# of about 1B parameters (16 layers, n_embd 2048, 32 heads, 8 key/value
# heads, intermediate 5632, vocab 32000, seq_len 2048, batch 4) in bf16; the
# median of the steps after two warm-up steps
steps_ms() { awk -F'|' '/^step +[0-9]+ \| loss/ { n++; if (n > 2) { gsub(/ ms/, "", $4); print $4 + 0 } }' "$1" | sort -n |
  awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "none" }'; }
timeout 60 ./ndgraph run configs/quickstart.yaml --set runtime.workers=2 --set runtime.cuda_devices=1 \
  --set train.steps=30 --set train.save_dir= --set log.every=10 >"$out/quickstart.log" 2>&1
row "quick start, 1 CPU worker + 1 GPU" "exit $?" "$(grep -m1 '^ndgraph:' "$out/quickstart.log" | cut -c1-120 | tr '|' /); $(grep '^step' "$out/quickstart.log" | tail -1 | tr '|' /)"
one_gpu=(--set parallelism.pipeline_parallel_size=1 --set parallelism.micro_batches=1 --set parallelism.activation_slots=1
  --set train.save_dir= --set train.eval_every=0 --set log.every=1 --set runtime.workers=2 --set runtime.cuda_devices=1
  --set train.steps=8)
gpt2=(--set model.n_layer=12 --set model.n_head=12 --set model.n_embd=768 --set model.seq_len=1024
  --set model.vocab_size=50257 --set train.micro_batch_size=8)
llama=(--set model.n_layer=16 --set model.n_head=32 --set model.n_kv_head=8 --set model.n_embd=2048
  --set model.intermediate_size=5632 --set model.vocab_size=32000 --set model.seq_len=2048 --set train.micro_batch_size=4)
# bench NAME TOKENS_PER_STEP FLOPS_PER_TOKEN CONFIG ARGS...: one row, ms/step, tokens/s and TFLOP/s
bench() {
  local name=$1 tokens=$2 flops=$3 config=$4 f=$out/bench-$(echo "$1" | tr -c 'a-zA-Z0-9\n' -).log; shift 4
  timeout 120 ./ndgraph run "$config" "${one_gpu[@]}" "$@" >"$f" 2>&1
  local rc=$? ms
  ms=$(steps_ms "$f")
  if [ "$ms" = none ]; then row "$name" "exit $rc, no timed step" "$(tail -1 "$f" | cut -c1-160 | tr '|' /)"; return; fi
  row "$name" "$(awk -v ms="$ms" -v t="$tokens" 'BEGIN { printf "%.0f tokens/s", t / (ms / 1000) }')" \
    "$ms ms/step, $(awk -v ms="$ms" -v t="$tokens" -v f="$flops" 'BEGIN { printf "%.1f TFLOP/s", t / (ms / 1000) * f / 1e12 }')"
}
# 6 N + 6 L T C per token (gpu_torch_bench.py's count)
gpt2_flops=$(( 6 * (12 * 12 * 768 * 768 + 50257 * 768) + 6 * 12 * 1024 * 768 ))
llama_flops=$(( 6 * (16 * (2048 * (2048 + 2 * 512) + 2048 * 2048 + 3 * 2048 * 5632) + 32000 * 2048) + 6 * 16 * 2048 * 2048 ))
for p in fp32 tf32 bf16; do
  bench "ndgraph GPT-2 small $p (B 8, T 1024)" 8192 $gpt2_flops configs/quickstart.yaml "${gpt2[@]}" --set train.precision=$p
done
bench "ndgraph Llama ~1B bf16 (B 4, T 2048)" 8192 $llama_flops configs/llama-tiny.yaml "${llama[@]}" --set train.precision=bf16

# 6. the PyTorch peer and the GEMM peak of each precision, same GPU, same
# run: GPT-2 small eager and torch.compile in each precision, the Llama in
# bf16 (compile rows are short: the compile is their cost)
if command -v python3 >/dev/null; then
  timeout 300 python3 "$root/scripts/gpu_torch_bench.py" gpt2 8 fp32,tf32,bf16 eager,compile --peaks 2>>"$log" | tee -a "$table"
  timeout 150 python3 "$root/scripts/gpu_torch_bench.py" llama 4 bf16 eager,compile 2>>"$log" | tee -a "$table"
else
  row "PyTorch" "skipped" "no python3"
fi
finish
