#!/usr/bin/env bash
# A Hugging Face style GPT-2 checkpoint (names prefixed with "transformer.",
# the attention-mask buffers beside the weights, no optimizer state) loads:
# `ndgraph eval` gives the same loss as on ndgraph's own checkpoint, and
# `ndgraph run --resume` fine-tunes from it, starting at step 0. `eval
# --checkpoint` takes a save folder as `--resume` does. A checkpoint of a
# longer context (n_positions 32) fine-tunes at seq_len 16: its first 16
# positions train, and the whole table is written back, the rows past 16 unchanged.
. "${ND_SRCDIR:-.}/tests/tap.sh"

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.micro_batch_size=2 --set parallelism.micro_batches=2 --set train.eval_every=0
      --set runtime.workers=2)
"$ndgraph" run "${tiny[@]}" --set train.steps=3 --set train.save_dir="$tmp/ck" >/dev/null 2>&1
ok $? "a small run writes a checkpoint"

mkdir -p "$tmp/hf"
python3 - "$tmp/ck/step-3/model.safetensors" "$tmp/hf/model.safetensors" <<'PY'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
body = data[8 + n:]
out, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
def add(name, shape, raw):
    global at
    out[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(raw)]}
    blobs.append(raw)
    at += len(raw)
for name, t in header.items():
    if name == "__metadata__":
        continue
    b, e = t["data_offsets"]
    add("transformer." + name, t["shape"], body[b:e])
    if name.endswith("ln_1.weight"):  # the causal mask buffer of that block
        T = 16
        mask = b"".join(struct.pack("<f", 1.0 if j <= i else 0.0) for i in range(T) for j in range(T))
        add("transformer." + name.replace("ln_1.weight", "attn.bias"), [1, 1, T, T], mask)
h = json.dumps(out).encode()
h += b" " * (-len(h) % 8)
open(dst, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
ok $? "the checkpoint rewritten with Hugging Face names and mask buffers"

own=$("$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/ck/step-3" 2>&1)
hf=$("$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/hf" 2>&1)
[ -n "$own" ] && [ "$own" = "$hf" ]
ok $? "eval on the Hugging Face layout gives the same result ($hf)"

"$ndgraph" run "${tiny[@]}" --set train.steps=2 --set train.save_dir= --resume "$tmp/hf" >"$tmp/out" 2>&1
status=$?
grep -q "initialized from the weights of $tmp/hf" "$tmp/out" && grep -q "^step     2 " "$tmp/out"
ok $(( status + $? )) "run --resume fine-tunes from weights alone, from step 0"
folder=$("$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/ck" 2>&1)
[ -n "$own" ] && [ "$own" = "$folder" ]
ok $? "eval --checkpoint takes the save folder: its newest step-3 ($folder)"

"$ndgraph" run "${tiny[@]}" --set model.seq_len=32 --set train.steps=2 --set train.save_dir="$tmp/long" >/dev/null 2>&1
ok $? "a run at seq_len 32 writes a checkpoint of 32 positions"
"$ndgraph" run "${tiny[@]}" --set train.steps=4 --set train.save_dir="$tmp/short" --resume "$tmp/long" >"$tmp/out" 2>&1
ok $? "it fine-tunes at seq_len 16 ($(tail -1 "$tmp/out"))"
python3 - "$tmp/long/step-2" "$tmp/short/step-4" <<'PY'
import json, re, struct, sys
def wpe(d, name="wpe.weight"):
    data = open(d + ("/optimizer.safetensors" if name != "wpe.weight" else "/model.safetensors"), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    t = json.loads(data[8:8 + n])[name]
    b, e = t["data_offsets"]
    return t["shape"], struct.unpack("<%df" % ((e - b) // 4), data[8 + n + b:8 + n + e])
(s0, a), (s1, b) = wpe(sys.argv[1]), wpe(sys.argv[2])
C = s0[1]
cfg = json.load(open(sys.argv[2] + "/config.json"))
checks = {"shape [32, C] written back": s0 == s1 == [32, C], "config.json n_positions 32": cfg["n_positions"] == 32,
          "rows 0..15 trained": a[:16 * C] != b[:16 * C], "rows 16..31 unchanged": a[16 * C:] == b[16 * C:],
          "Adam's moments too": wpe(sys.argv[1], "m.wpe.weight")[1][16 * C:] == wpe(sys.argv[2], "m.wpe.weight")[1][16 * C:]}
for k, v in checks.items():
    print(f"# {k}: {v}")
sys.exit(0 if all(checks.values()) else 1)
PY
ok $? "the whole position table is written back: rows 0..15 trained, 16..31 as the file had them"
done_testing
