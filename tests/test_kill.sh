#!/usr/bin/env bash
# scripts/kill-test.sh with 5 trials (docs/reliability.md has 100): after
# kill -9 during checkpointing, no checkpoint is corrupt, the next start
# resumes from the newest, and leaves no temporary directory.
. "${ND_SRCDIR:-.}/tests/tap.sh"

NDGRAPH=$ndgraph "$srcdir/scripts/kill-test.sh" 5 >"$tmp/out" 2>&1
sed 's/^/# /' "$tmp/out"
summary=$(grep '^summary:' "$tmp/out")
ok $([ -n "$summary" ]; echo $?) "the kill test ran: $summary"
num() { sed -n "s/.*[ (]\([0-9][0-9]*\) $1.*/\1/p" <<<"$summary"; }
ok $([ "$(num 'without a checkpoint')" = 0 ]; echo $?) "every trial was killed after its first checkpoint"
ok $([ "$(num 'corrupt')" = 0 ]; echo $?) "no corrupt checkpoint"
ok $([ "$(num 'of [0-9]* resumes failed')" = 0 ]; echo $?) "every resume started from the newest checkpoint"
# Until the start cleans stale temporaries (issue 16; nd_checkpoint_clean_stale),
# their count is a known failure, not a regression.
left=$(num 'temporaries left')
if grep -q nd_checkpoint_clean_stale "$srcdir/checkpoint/checkpoint.h" || [ "$left" = 0 ]; then
  ok $([ "$left" = 0 ]; echo $?) "no temporary left after the next start"
else
  tap_n=$((tap_n + 1))
  echo "not ok $tap_n - $left temporaries left after the next start # TODO not cleaned at start yet"
fi
done_testing
