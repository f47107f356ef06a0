#!/bin/sh
# Fuzzes one of ndgraph's file readers with libFuzzer, AddressSanitizer and
# UBSan; scripts/fuzz-safetensors.sh and scripts/fuzz-trace.sh call this.
#
#   scripts/fuzz.sh TARGET [SECONDS]      TARGET: safetensors | trace; default 60 s
#
# Needs clang with its fuzzer runtime (Debian: clang, libclang-rt-14-dev) and
# cJSON. Builds build-fuzz/fuzz_TARGET from the reader's sources directly (no
# configure needed), seeds it with tests/fuzz/TARGET/ (committed) and keeps
# new inputs in fuzz/corpus-TARGET/. A crash, leak or timeout leaves its input
# as build-fuzz/crash-* (leak-*, timeout-*) and makes the script fail; replay
# one with build-fuzz/fuzz_TARGET build-fuzz/crash-...
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
target=${1:?usage: fuzz.sh safetensors|trace [SECONDS]}
seconds=${2:-60}
cc=${CC:-clang}
build=$top/build-fuzz
corpus=$top/fuzz/corpus-$target

case $target in
  safetensors)
    sources="$top/checkpoint/safetensors.c"
    max_len=65536
    dict='"\"dtype\"" "\"shape\"" "\"data_offsets\"" "\"F32\"" "\"F16\"" "\"__metadata__\"" "\"transformer.\"" "[" "]" "{" "}" ":" "," "1e999" "9007199254740993" "-1"'
    ;;
  trace)
    sources="$top/trace/reader.c $top/trace/steps.c $top/trace/summary.c $top/graph/bound.c"
    max_len=65536
    dict='"\"traceEvents\"" "\"ph\"" "\"X\"" "\"s\"" "\"f\"" "\"M\"" "\"bp\"" "\"e\"" "\"ts\"" "\"dur\"" "\"pid\"" "\"tid\"" "\"id\"" "\"args\"" "\"phase\"" "\"micro_batch\"" "\"task\"" "\"thread_name\"" "\"thread_sort_index\"" "\"sort_index\"" "1e308" "-1e308" "NaN"'
    ;;
  *) echo "fuzz.sh: unknown target $target (safetensors or trace)" >&2; exit 2 ;;
esac

mkdir -p "$build" "$corpus"
for tok in $dict; do echo "$tok"; done > "$build/$target.dict"

# shellcheck disable=SC2046,SC2086 # pkg-config output and the source list are meant to split
"$cc" -g -O1 -std=c11 -D_GNU_SOURCE \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$top/include" -I"$top" \
  $sources "$top"/common/*.c "$top/tests/fuzz_$target.c" \
  $(pkg-config --cflags --libs libcjson hwloc) -lm \
  -o "$build/fuzz_$target"

cd "$build"
exec "./fuzz_$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -dict="$build/$target.dict" -print_final_stats=1 "$corpus" "$top/tests/fuzz/$target"
