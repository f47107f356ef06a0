#!/usr/bin/env bash
# The kernel set OpenBLAS runs ndgraph's CPU GEMMs on (kernels/cpu/openblas_core.c):
# on a CPU with AVX2 and FMA never its generic SSE3 one, even where OpenBLAS
# does not know the CPU's model; the user's OPENBLAS_CORETYPE kept as given.
. "${ND_SRCDIR:-.}/tests/tap.sh"

fast="Haswell|Zen|SkylakeX|Cooperlake|SapphireRapids"
chosen=$(env -u OPENBLAS_CORETYPE "$ndgraph" --version | sed -n 's/^OpenBLAS kernels //p')
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  [[ "$chosen" =~ ^($fast)$ ]]
  ok $? "a CPU with AVX2 and FMA runs an AVX2 kernel set: $chosen"
else
  ok 0 "# SKIP this CPU has no AVX2 and FMA (OpenBLAS kernels $chosen)"
fi

core=$(OPENBLAS_CORETYPE=Prescott "$ndgraph" --version | sed -n 's/^OpenBLAS kernels //p')
[ "$core" = Prescott ]
ok $? "OPENBLAS_CORETYPE=Prescott is kept: $core"

# the run's header names the set its steps use
env -u OPENBLAS_CORETYPE "$ndgraph" run --set model.n_layer=1 --set model.n_embd=32 --set model.n_head=4 \
  --set model.seq_len=16 --set train.micro_batch_size=2 --set parallelism.micro_batches=2 \
  --set parallelism.pipeline_parallel_size=1 --set train.steps=1 --set train.eval_every=0 --set train.save_dir= \
  >"$tmp/out" 2>"$tmp/err"
grep -q "CPU workers (OpenBLAS $chosen)" "$tmp/out"
ok $? "the run's header names the kernel set: $(head -1 "$tmp/out" | sed 's/.*| \([0-9]* CPU workers[^,]*\).*/\1/') $(head -c 200 "$tmp/err")"

# started through the dynamic loader (`ld.so ndgraph ...`), /proc/self/exe
# is the loader, which would take the next argument for the program
ld=/lib64/ld-linux-x86-64.so.2
bin="${ND_BUILDDIR:-.}/.libs/ndgraph"
if [ -x "$ld" ] && [ -x "$bin" ]; then
  env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH="${ND_BUILDDIR:-.}/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$ld" "$bin" --version >"$tmp/ld" 2>&1
  grep -q "^OpenBLAS kernels " "$tmp/ld"
  ok $? "ld.so ndgraph --version runs without re-executing the loader: $(tail -1 "$tmp/ld")"
else
  ok 0 "# SKIP no $ld or no $bin"
fi
done_testing
