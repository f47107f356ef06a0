#!/usr/bin/env bash
# plan --nodes N --process P: process P's share alone, built without the
# step: the same line as in plan --nodes N's table, no whole-step summary;
# a process outside the launch, or --process without --nodes, is bad input.
. "${ND_SRCDIR:-.}/tests/tap.sh"

cfg="$srcdir/configs/quickstart.yaml"
set=(--set parallelism.data_parallel_size=2 --set parallelism.pipeline_parallel_size=2
     --set parallelism.tensor_parallel_size=2)

"$ndgraph" plan "$cfg" "${set[@]}" --nodes 3 >"$tmp/table.out" 2>&1
ok $? "plan --nodes 3: the table"
for p in 0 1 2; do
  "$ndgraph" plan "$cfg" "${set[@]}" --nodes 3 --process $p >"$tmp/p$p.out" 2>&1
  st=$?
  line=$(grep "^  process $p: " "$tmp/p$p.out")
  [ $st -eq 0 ] && [ -n "$line" ] && grep -qxF -- "$line" "$tmp/table.out" &&
    grep -q "^nodes: process $p of 3, built alone" "$tmp/p$p.out" && ! grep -q '^training-step graph' "$tmp/p$p.out" &&
    [ "$(grep -c '^  process ' "$tmp/p$p.out")" -eq 1 ]
  ok $? "plan --nodes 3 --process $p: its line of the table alone (exit $st)"
done
grep -q 'receives [0-9.]* MB' "$tmp/table.out"
ok $? "plan --nodes: each process's received bytes"

"$ndgraph" plan "$cfg" "${set[@]}" --nodes 3 --process 3 >"$tmp/bad.out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "^ndgraph: --process '3': expected a whole number from 0 to 2" "$tmp/bad.out"
ok $? "--process 3 of 3 processes: bad input, one line (exit $st)"
"$ndgraph" plan "$cfg" --process 0 >"$tmp/alone.out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "^ndgraph: --process 0: goes with --nodes N" "$tmp/alone.out"
ok $? "--process without --nodes: bad input, one line (exit $st)"

done_testing
