# TAP for shell tests: source it, call ok COND_STATUS "name", end with done_testing.
tap_n=0
tap_failed=0
ok() { # ok STATUS NAME: STATUS 0 passes
  tap_n=$((tap_n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
diag() { echo "# $*"; }
# expect STATUS PATTERN NAME -- command...: the command exits STATUS and writes
# exactly one line on stderr, matching PATTERN (grep -E); expect_timeout
# (seconds, 0: none) bounds it.
expect() {
  local want=$1 pattern=$2 name=$3; shift 4
  timeout -k 10 "${expect_timeout:-0}" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$got" -eq "$want" ] && [ "$lines" -eq 1 ] && grep -qE -- "$pattern" "$tmp/err"; then ok 0 "$name"
  else ok 1 "$name (exit $got, want $want; stderr: $(head -c 300 "$tmp/err"))"; fi
}
# metric_losses FILE: the training losses of an --metrics file, digit for
# digit as written (repr of each double), one line; empty if unreadable
metric_losses() {
  python3 -c 'import json,sys; print(" ".join(repr(json.loads(l)["loss"]) for l in open(sys.argv[1]) if "\"loss\"" in l))' "$1" 2>/dev/null
}
# same A B: the losses and gradient norms of two metrics files are the same bits
same() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = ([(l["step"], l["loss"], l["grad_norm"]) for l in map(json.loads, open(p)) if "loss" in l] for p in sys.argv[1:3])
sys.exit(0 if a == b and len(a) > 0 else 1)
PY
}
# wait_or_kill PID TENTHS: PID's exit status once it ends; one still running
# after TENTHS tenths of a second is killed (a test cannot hang) and gives 137
wait_or_kill() {
  for _ in $(seq "$2"); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
  wait "$1"
}
done_testing() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
ndgraph="${ND_BUILDDIR:-.}/ndgraph"
srcdir="${ND_SRCDIR:-.}"
tmp=$(mktemp -d /tmp/ndgraph-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
