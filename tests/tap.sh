# TAP for shell tests: source it, call ok COND_STATUS "name", end with done_testing.
tap_n=0
tap_failed=0
ok() { # ok STATUS NAME: STATUS 0 passes
  tap_n=$((tap_n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
diag() { echo "# $*"; }
done_testing() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
ndgraph="${ND_BUILDDIR:-.}/ndgraph"
srcdir="${ND_SRCDIR:-.}"
tmp=$(mktemp -d /tmp/ndgraph-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
