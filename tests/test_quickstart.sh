#!/usr/bin/env bash
# The quick start trains (the loss at most half its first value), reports a
# validation loss, and its final checkpoint read back by `ndgraph eval` gives
# the loss of the last logged evaluation on the same batches.
. "${ND_SRCDIR:-.}/tests/tap.sh"

start=$(date +%s)
"$ndgraph" run "$srcdir/configs/quickstart.yaml" --set train.save_dir="$tmp/qs" --metrics "$tmp/m.jsonl" >"$tmp/out" 2>&1
ok $? "ndgraph run configs/quickstart.yaml exits 0 ($(($(date +%s) - start)) s)"
tail -3 "$tmp/out" | sed 's/^/# /'

python3 - "$tmp/m.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
train = [l for l in lines if "loss" in l]
val = [l for l in lines if "val_loss" in l]
for l in train:
    assert all(k in l for k in ("step", "loss", "lr", "step_ms", "tokens_per_s", "gflops")), l
first, last = train[0]["loss"], train[-1]["loss"]
print(f"# first loss {first:.4f}, last {last:.4f}, last val_loss {val[-1]['val_loss']:.4f}")
sys.exit(0 if last <= first / 2 and val else 1)
PY
ok $? "the training loss falls to at most half its first value and a validation loss is logged"

steps=$(python3 -c "import json;print([json.loads(l) for l in open('$tmp/m.jsonl')][-1]['step'])")
eval_json=$("$ndgraph" eval "$srcdir/configs/quickstart.yaml" --checkpoint "$tmp/qs/step-$steps" 2>&1)
ok $? "ndgraph eval reads the checkpoint: $eval_json"
python3 - "$tmp/m.jsonl" "$eval_json" <<'PY'
import json, sys
val = [json.loads(l) for l in open(sys.argv[1]) if "val_loss" in l][-1]
ev = json.loads(sys.argv[2])
print(f"# logged val_loss {val['val_loss']!r}, eval {ev['loss']!r}, tokens {ev['tokens']} / {val['tokens']}")
sys.exit(0 if abs(ev["loss"] - val["val_loss"]) <= 1e-6 * abs(val["val_loss"]) and ev["tokens"] == val["tokens"] else 1)
PY
ok $? "the checkpoint's eval loss equals the last logged evaluation"
done_testing
