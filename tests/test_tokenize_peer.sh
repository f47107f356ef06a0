#!/usr/bin/env bash
# scripts/peers/tokenizer.py, the comparison a user runs on their own
# tokenizer.json and text: it agrees on the fixtures and on text made at
# random from awkward pieces, finds a planted difference, and is skipped
# where Python's `tokenizers` is absent.
. "${ND_SRCDIR:-.}/tests/tap.sh"
peer="$srcdir/scripts/peers/tokenizer.py"
fix="$srcdir/tests/fixtures/tokenizer"
if ! python3 -c 'import tokenizers' 2>/dev/null; then
  echo "1..0 # SKIP Python's tokenizers is not installed"
  exit 0
fi
python3 "$fix/corpus.py" test "$tmp/c"
python3 - "$tmp/r" <<'PY'
import os, random, sys
pool = [b" ", b"  ", b"\t", b"\n", b"\r\n", b"a", b"The", b"'s", b"'LL", b"123", b"12345", b".,", b"!?",
        "日本".encode(), "😀".encode(), "👍🏽".encode(), "\u00a0".encode(), "\u3000".encode(), "\u180e".encode(),
        "e\u0301".encode(), b"\xff", b"\xe2\x82", b"\xed\xa0\x80", b"<|endoftext|>", b"</s>", b"<s>", b"\x00", b"\x0b"]
rng = random.Random(7)
os.makedirs(sys.argv[1])
for i in range(20):
    with open(os.path.join(sys.argv[1], "r%02d.txt" % i), "wb") as f:
        f.write(b"".join(rng.choice(pool) for _ in range(rng.randint(0, 500))))
PY
for t in gpt2 llama2 llama3; do
  python3 "$peer" "$fix/$t.json" "$tmp"/c/*.txt "$tmp"/r/*.txt --ndgraph "$ndgraph" >"$tmp/out" 2>&1
  ok $? "$t: the same ids as tokenizers, fixtures and random text ($(cat "$tmp/out"))"
done
# a Metaspace pre-tokenizer (Mistral-style) in place of Llama 2's normalizers
python3 - "$fix/llama2.json" "$tmp/meta.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1], encoding="utf-8"))
j["normalizer"] = None
j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
json.dump(j, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
python3 "$peer" "$tmp/meta.json" "$tmp"/c/*.txt "$tmp"/r/*.txt --ndgraph "$ndgraph" >"$tmp/out" 2>&1
ok $? "Metaspace: the same ids ($(cat "$tmp/out"))"
# a planted difference: a peer that saw none would prove nothing
printf '#!/bin/sh\nexec "%s" "$@" --eot 1\n' "$ndgraph" >"$tmp/wrong"
chmod +x "$tmp/wrong"
python3 "$peer" "$fix/gpt2.json" "$tmp/c/mixed.txt" --ndgraph "$tmp/wrong" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "first difference at id 0" "$tmp/out"
ok $? "a difference is found and placed ($(head -1 "$tmp/out"))"
done_testing
