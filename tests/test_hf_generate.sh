#!/usr/bin/env bash
# Greedy `ndgraph generate` gives transformers' generate(do_sample=False) ids
# on a small GPT-2 and Llama that transformers makes (tests/hf_generate_peer.py);
# skipped where Python's transformers is absent.
. "${ND_SRCDIR:-.}/tests/tap.sh"
python3 "$srcdir/tests/hf_generate_peer.py" "$ndgraph" "$tmp" >"$tmp/peer" 2>/dev/null
status=$?
if [ $status -eq 77 ]; then echo "1..0 # SKIP $(head -1 "$tmp/peer")"; exit 0; fi
sed 's/^/# /' "$tmp/peer"
ok $status "ndgraph's greedy ids are transformers' (GPT-2 and Llama, tp 1 and 2)"
done_testing
