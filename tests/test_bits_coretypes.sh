#!/usr/bin/env bash
# The tests that promise bits, under every OpenBLAS kernel set a CI machine
# may pick: OpenBLAS chooses its kernels by CPU, and its Haswell and Zen
# kernels block a product otherwise than SkylakeX's, so a test that passes
# on an AVX-512 machine could fail on an AVX2 one. OPENBLAS_CORETYPE forces
# a set on any x86-64 CPU that has its instructions; a set this CPU cannot
# run is skipped, with the instructions it lacks.
#   test_share           helped kernels against unhelped, block by block
#   test_sched_parity    every policy and placement, help against sleep
#   test_train           two runs, policies, resume
#   test_determinism.sh  three default runs and a passive one, losses and checkpoints
. "${ND_SRCDIR:-.}/tests/tap.sh"

builddir="${ND_BUILDDIR:-.}"
tests=(tests/test_share tests/test_sched_parity tests/test_train "$srcdir/tests/test_determinism.sh")
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "

# needs CORETYPE: the CPU flags its kernels use
needs() {
  case $1 in
    SkylakeX) echo avx512f avx512cd avx512bw avx512dq avx512vl avx2 fma ;;
    Haswell | Zen) echo avx2 fma ;;
    Sandybridge) echo avx ;;
  esac
}

for core in Haswell Zen SkylakeX Sandybridge; do
  missing=""
  for f in $(needs $core); do
    case $flags in *" $f "*) ;; *) missing="$missing $f" ;; esac
  done
  # the set OpenBLAS takes: the one asked for, or the tests prove nothing
  took=$([ -z "$missing" ] && OPENBLAS_CORETYPE=$core "$ndgraph" --version 2>/dev/null | sed -n 's/^OpenBLAS kernels //p')
  for t in "${tests[@]}"; do
    name=$(basename "$t")
    if [ "$flags" = "  " ] || [ -n "$missing" ]; then
      echo "ok $((tap_n += 1)) - $core: $name # SKIP this CPU lacks${missing:- a flags line in /proc/cpuinfo}"
      continue
    fi
    case $t in /*) path=$t ;; *) path=$builddir/$t ;; esac
    OPENBLAS_CORETYPE=$core "$path" >"$tmp/out" 2>&1
    status=$?
    passed=$(grep -c '^ok' "$tmp/out")
    failed=$(grep -c '^not ok' "$tmp/out")
    [ "$status" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ] && [ "$took" = "$core" ]
    ok $? "$core: $name ($passed passed, $failed failed, OpenBLAS took ${took:-no kernel set it named})"
    grep '^not ok' "$tmp/out" | head -5 | sed 's/^/# /'
    # a test that ended without failing a case (a signal, an assertion): its last words
    [ "$status" -eq 0 ] || tail -5 "$tmp/out" | grep -v '^ok' | sed "s/^/# $core $name exit $status: /"
  done
done
done_testing
