#!/usr/bin/env bash
# Runs the whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer,
# in a separate build of a clean copy of this tree (build-asan/), so the
# in-tree build is left alone.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir="$top/build-asan"
rm -rf "$dir"
git -C "$top" worktree prune
git -C "$top" worktree add --detach "$dir" HEAD >/dev/null 2>&1 || cp -r "$top" "$dir"
cd "$dir"
# Leaks are reported for our code only (scripts/lsan.supp names the others);
# the slow unwinder sees through the frames of dlopen'ed plugins, which the
# suppressions need.
export LSAN_OPTIONS="suppressions=$top/scripts/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
./autogen.sh >/dev/null
./configure --enable-sanitizers --enable-werror >/dev/null
make -j2 >/dev/null
make -j2 check
