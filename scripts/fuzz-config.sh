#!/bin/sh
# Fuzzes the configuration loader (nd_config_load_string, validate, dump and
# --set) with libFuzzer, AddressSanitizer and UBSan.
#
#   scripts/fuzz-config.sh [SECONDS]      default 60
#
# Needs clang with its fuzzer runtime (Debian: clang, libclang-rt-14-dev) and
# libyaml. Builds build-fuzz/fuzz_config from the config sources directly (no
# configure needed), seeds it with every YAML file under tests/configs and
# configs/, and keeps new inputs in fuzz/corpus-out/. A crash leaves its input
# as build-fuzz/crash-* and makes the script fail; replay one with
#   build-fuzz/fuzz_config build-fuzz/crash-...
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
cc=${CC:-clang}
build=$top/build-fuzz
corpus=$top/fuzz/corpus-out

mkdir -p "$build/seeds" "$corpus"
find "$top/tests/configs" "$top/configs" -name '*.yaml' -exec cp {} "$build/seeds/" \;

# Section and key names from the quick-start, so mutations find real keys.
{
  sed -n 's/^\([a-z_]*\):.*/"\1:"/p; s/^  \([a-z_]*\):.*/"\1:"/p' "$top/configs/quickstart.yaml"
  for tok in '"["' '"]"' '"{"' '"}"' '"- "' '"&a "' '"*a"' '"!!str "' '"---"' '"auto"' '"true"'; do
    echo "$tok"
  done
} > "$build/config.dict"

# shellcheck disable=SC2046 # pkg-config output is meant to split
"$cc" -g -O1 -std=c11 -D_GNU_SOURCE \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$top/include" -I"$top" \
  "$top"/configs/*.c "$top/common/error.c" "$top/common/file.c" "$top/tests/fuzz_config.c" \
  $(pkg-config --cflags --libs yaml-0.1) -lm \
  -o "$build/fuzz_config"

cd "$build"
exec ./fuzz_config -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -dict="$build/config.dict" -print_final_stats=1 "$corpus" "$build/seeds"
