#!/usr/bin/env python3
"""ndgraph's tokenizer beside Hugging Face `tokenizers` on your own files:

    scripts/peers/tokenizer.py TOKENIZER.json TEXT... [--ndgraph ./ndgraph]

Runs `ndgraph tokenize --tokenizer TOKENIZER.json TEXT... -o TMP --eot E` and
builds the same stream with `tokenizers`: for each file, E then
encode(text, add_special_tokens=False).ids, the file read with
bytes.decode("utf-8", errors="replace") (docs/text.md). E is the
tokenizer's end-of-text token as ndgraph finds it (0 when there is none).
Exit 0 when every id is the same, 1 at the first difference (printed with
its place and the tokens around it), 2 on bad input, 77 when Python's
`tokenizers` is not installed."""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

EOT_NAMES = ["<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tokenizer")
    ap.add_argument("text", nargs="+")
    ap.add_argument("--ndgraph", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                       "ndgraph"))
    a = ap.parse_args()
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("skip: Python's tokenizers is not installed (pip install tokenizers)", file=sys.stderr)
        return 77
    try:
        tok = Tokenizer.from_file(a.tokenizer)
    except Exception as e:  # tokenizers raises its own exception types
        print("%s: tokenizers cannot load it: %s" % (a.tokenizer, e), file=sys.stderr)
        return 2
    specials = {t.content: i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    eot = next((specials[n] for n in EOT_NAMES if n in specials), 0)
    want = []
    for path in a.text:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
        want += [eot] + tok.encode(text, add_special_tokens=False).ids
    vocab = max([tok.get_vocab_size(with_added_tokens=True) - 1] + list(tok.get_added_tokens_decoder())) + 1
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ids")
        r = subprocess.run([a.ndgraph, "tokenize", "--tokenizer", a.tokenizer, *a.text, "-o", out, "--eot", str(eot)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            print("ndgraph tokenize failed (exit %d): %s" % (r.returncode, r.stderr.strip()), file=sys.stderr)
            return r.returncode
        data = open(out, "rb").read()
    width = 2 if vocab <= 65536 else 4
    got = list(struct.unpack("<%d%s" % (len(data) // width, "H" if width == 2 else "I"), data))
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            lo = max(0, i - 5)
            print("first difference at id %d: ndgraph %d (%r), tokenizers %d (%r)" %
                  (i, g, tok.id_to_token(g), w, tok.id_to_token(w)))
            print("  before it: %r" % [tok.id_to_token(t) for t in want[lo:i]])
            return 1
    if len(got) != len(want):
        print("ndgraph wrote %d ids, tokenizers gives %d (the first %d agree)" % (len(got), len(want),
                                                                                  min(len(got), len(want))))
        return 1
    print("same %d ids from %d file%s (%s, end-of-text %d)" % (len(got), len(a.text), "s" * (len(a.text) > 1),
                                                            a.tokenizer, eot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
