#!/usr/bin/env bash
# bench/generate (bench/README.md) on its smallest run, one round of 2 new
# tokens after a prompt of 8: a table with a row of finite times; each bad
# argument refused with one line naming it and exit 2.
. "${ND_SRCDIR:-.}/tests/tap.sh"
bench="${ND_BUILDDIR:-.}/bench/generate"

"$bench" 2 1 8 >"$tmp/table" 2>"$tmp/err"
ok $? "one round of 2 tokens after 8 ($(cat "$tmp/err"))"
grep -Eq '^\| 8 \| [0-9]+\.[0-9]{3} \| 1\.00 \| [0-9]+\.[0-9]{2} \| 1\.00 \| [0-9]+\.[0-9] \|$' "$tmp/table"
ok $? "its row: finite times, ratios to itself of 1 ($(grep '^| 8' "$tmp/table"))"
expect 2 "^bench/generate: TOKENS '1'" "TOKENS 1 (no decoding step) is refused" -- "$bench" 1 1 8
expect 2 "^bench/generate: ROUNDS '0'" "ROUNDS 0 is refused" -- "$bench" 2 0 8
expect 2 "^bench/generate: PROMPT '500'" "a prompt with no room for its tokens is refused" -- "$bench" 64 1 500
expect 2 "^bench/generate: PROMPT 'x'" "a prompt length that is not a number is refused" -- "$bench" 2 1 8,x
expect 2 "^bench/generate: more than 8 prompt lengths" "too many prompt lengths are refused" -- \
  "$bench" 2 1 1,2,3,4,5,6,7,8,9
done_testing
