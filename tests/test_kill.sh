#!/usr/bin/env bash
# scripts/kill-test.sh with 5 trials (docs/reliability.md has 100): after
# kill -9 during checkpointing, no checkpoint is corrupt, the next start
# resumes from the newest, and leaves no temporary directory.
. "${ND_SRCDIR:-.}/tests/tap.sh"

NDGRAPH=$ndgraph "$srcdir/scripts/kill-test.sh" 5 >"$tmp/out" 2>&1
sed 's/^/# /' "$tmp/out"
summary=$(grep '^summary:' "$tmp/out")
ok $([ -n "$summary" ]; echo $?) "the kill test ran: $summary"
num() { sed -n "s/.* \([0-9][0-9]*\) $1.*/\1/p" <<<"$summary"; }
ok $([ "$(num 'corrupt')" = 0 ]; echo $?) "no corrupt checkpoint"
ok $([ "$(num 'of [0-9]* resumes failed')" = 0 ]; echo $?) "every resume started from the newest checkpoint"
ok $([ "$(num 'temporaries left')" = 0 ]; echo $?) "no temporary left after the next start"
done_testing
