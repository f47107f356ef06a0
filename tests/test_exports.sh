#!/usr/bin/env bash
# libndgraph.so exports exactly the public API: the functions that
# include/ndgraph/*.h marks ND_EXPORT, nothing internal (Makefile.am builds
# the library with -fvisibility=hidden and an export list made from the
# headers; an ifunc, type i, counts too).
. "${ND_SRCDIR:-.}/tests/tap.sh"

# a function declared without ND_EXPORT would be hidden: name it
unmarked=$(cd "$srcdir" && grep -HnE '^(const |unsigned |struct )?[a-z_0-9]+[ *]+nd_[a-z_0-9]+\(' include/ndgraph/*.h)
[ -z "$unmarked" ]; ok $? "every function the public headers declare is marked ND_EXPORT"
[ -z "$unmarked" ] || printf '%s\n' "$unmarked" | sed 's/^/# /'

so="${ND_BUILDDIR:-.}/.libs/libndgraph.so"
if [ ! -f "$so" ] || ! command -v nm >/dev/null; then
  echo "ok 2 # SKIP no shared libndgraph.so or no nm"
  echo "1..2"
  exit $tap_failed
fi
nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRWi]$/ {print $3}' | sort >"$tmp/exported"
sed -n 's/^ND_EXPORT [^(]*[ *]\(nd_[a-z_0-9]*\)(.*/\1/p' "$srcdir"/include/ndgraph/*.h | sort >"$tmp/public"
[ -s "$tmp/public" ]; ok $? "the public headers mark $(wc -l <"$tmp/public") functions ND_EXPORT"
diff "$tmp/public" "$tmp/exported" >"$tmp/diff"
ok $? "libndgraph.so exports exactly them ($(wc -l <"$tmp/exported") symbols)"
sed 's/^/# /' "$tmp/diff"
done_testing
