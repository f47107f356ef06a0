#!/usr/bin/env bash
# bench/schedule on its smallest grid: a row per policy, a policy named twice
# printed as "POLICY (again)" with every reference taken from the first, the
# paired table (its interval "-" under 6 rounds), and bad arguments refused with one line and exit 2.
. "${ND_SRCDIR:-.}/tests/tap.sh"
bench="${ND_BUILDDIR:-.}/bench/schedule"

timeout -k 10 300 "$bench" 1 ndws,1f1b,ndws 2 2 2 >"$tmp/out" 2>"$tmp/err"
ok $? "bench/schedule 1 ndws,1f1b,ndws 2 2 2 runs ($(head -c 300 "$tmp/err"))"
python3 - "$tmp/out" >"$tmp/check" 2>&1 <<'PY'
import sys
rows, pairs = {}, {}
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) == 15 and c[0] == "2":
        rows[c[2]] = c
    elif len(c) == 9 and c[0] == "2":
        pairs[c[2]] = c
assert sorted(rows) == ["1f1b", "ndws", "ndws (again)"], "rows: %s" % sorted(rows)
step = {k: float(v[3]) for k, v in rows.items()}
assert all(t > 0 for t in step.values()), step
# the references are the first ndws row and 1f1b: ndws / over each row, / 1f1b
for k in rows:
    assert abs(float(rows[k][6]) - step["ndws"] / step[k]) < 2e-3, (k, rows[k][6])
    assert abs(float(rows[k][4]) - step[k] / step["1f1b"]) < 2e-3, (k, rows[k][4])
assert rows["ndws"][6] == "1.000"
assert sorted(pairs) == ["1f1b", "ndws (again)"], "paired rows: %s" % sorted(pairs)
assert pairs["ndws (again)"][7].endswith("/2"), pairs["ndws (again)"]
# two rounds are too few for a 95% interval of the median (bench/paired.h)
assert all(v[4] == "-" for v in pairs.values()), pairs
assert all(float(v[8]) > 0 for v in pairs.values()), pairs  # ndws's work over the row's
PY
ok $? "one row per policy, the second ndws as 'ndws (again)', the ratios against the first ndws and 1f1b ($(head -c 300 "$tmp/check"))"

expect 2 '^bench/schedule: .*ROUNDS' "ROUNDS 0 is refused in one line" -- "$bench" 1 ndws 2 2 0
expect 2 '^bench/schedule: .*ROUNDS' "ROUNDS 65, over the 64 a table holds, is refused in one line" -- "$bench" 1 ndws 2 2 65
expect 2 '^bench/schedule: .*nosuch' "an unknown policy is refused in one line, naming it" -- "$bench" 1 nosuch 2 2 1
expect 2 "^bench/schedule: row 'ndws~nosuch'.*wait_policy.*nosuch" "an unknown wait policy is refused in one line, naming it" -- \
  "$bench" 1 ndws~nosuch 2 2 1
expect 2 '^bench/schedule: .*empty or longer than 24$' "a list of 25 policies is refused in one line" -- \
  "$bench" 1 "$(printf 'ndws,%.0s' $(seq 24))ndws" 2 2 1
done_testing
