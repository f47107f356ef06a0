#!/usr/bin/env python3
"""ndgraph tokenize's speed beside Hugging Face `tokenizers` on one thread.

    bench/tokenize.py [--tokenizer T.json]... [--text FILE]... [--rounds N] [--ndgraph ./ndgraph]

Without --text: 16 files of 1 MB of corpus.py's training text (made here,
different seeds). Without --tokenizer: the three fixtures. ndgraph: the
wall time of `ndgraph tokenize` (start, reading, writing included);
tokenizers: encode(text, add_special_tokens=False) of each file already in
memory, in a process with RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false.
Best of N rounds each; the ids are checked equal first. Prints one table row
per tokenizer: tokens, tokens/s of each, and ndgraph's over tokenizers'."""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "tests", "fixtures", "tokenizer")

HF = r"""
import sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
texts = [open(p, "rb").read().decode("utf-8", errors="replace") for p in sys.argv[3:]]
best, n = 1e9, 0
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    n = sum(len(tok.encode(x, add_special_tokens=False).ids) for x in texts)
    best = min(best, time.perf_counter() - t)
print(n, best)
"""


def make_text(tmp):
    sys.path.insert(0, FIX)
    import random
    import corpus  # the fixtures' generator
    files = []
    for i in range(16):
        data = b""
        rng = random.Random(1000 + i)
        while len(data) < 1 << 20:
            data += corpus.training_text(rng) + b"\n"
        path = os.path.join(tmp, "text%02d.txt" % i)
        with open(path, "wb") as f:
            f.write(data[:1 << 20].rsplit(b" ", 1)[0])
        files.append(path)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", action="append")
    ap.add_argument("--text", action="append")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ndgraph", default=os.path.join(HERE, "..", "ndgraph"))
    a = ap.parse_args()
    toks = a.tokenizer or [os.path.join(FIX, n + ".json") for n in ("gpt2", "llama2", "llama3")]
    with tempfile.TemporaryDirectory() as tmp:
        texts = a.text or make_text(tmp)
        mb = sum(os.path.getsize(p) for p in texts) / 1e6
        print("%.1f MB of text in %d files, best of %d rounds\n" % (mb, len(texts), a.rounds))
        print("| tokenizer | tokens | ndgraph tokens/s | tokenizers tokens/s (1 thread) | ndgraph / tokenizers |")
        print("|---|---|---|---|---|")
        env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        for t in toks:
            peer = subprocess.run([sys.executable, os.path.join(HERE, "..", "scripts", "peers", "tokenizer.py"), t,
                                   *texts, "--ndgraph", a.ndgraph], capture_output=True, text=True)
            if peer.returncode:
                print("%s: the ids differ, no timing: %s" % (t, (peer.stdout + peer.stderr).strip()))
                continue
            out = os.path.join(tmp, "ids")
            best = 1e9
            for _ in range(a.rounds):
                s = time.perf_counter()
                subprocess.run([a.ndgraph, "tokenize", "--tokenizer", t, *texts, "-o", out], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                best = min(best, time.perf_counter() - s)
            r = subprocess.run([sys.executable, "-c", HF, t, str(a.rounds), *texts], env=env, capture_output=True,
                               text=True, check=True)
            n_hf, hf_s = r.stdout.split()
            n, hf_s = int(n_hf), float(hf_s)  # ndgraph's too: the peer found the same ids
            print("| %s | %d | %.2f M | %.2f M | %.1f |" % (os.path.basename(t), n, n / best / 1e6, n / hf_s / 1e6,
                                                           hf_s / best))


if __name__ == "__main__":
    main()
