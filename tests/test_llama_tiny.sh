#!/usr/bin/env bash
# configs/llama-tiny.yaml trains with one command (here 60 steps): the loss
# falls, the checkpoint is in Hugging Face's Llama layout (LlamaForCausalLM
# config.json, [out, in] projections), `ndgraph eval` reads it back, a run
# resumes from it, and a config.json that differs from the configuration in
# what Llama adds is refused with the field and both values.
. "${ND_SRCDIR:-.}/tests/tap.sh"

"$ndgraph" run "$srcdir/configs/llama-tiny.yaml" --set train.steps=60 --set train.eval_every=0 \
  --set train.save_dir="$tmp/ll" --metrics "$tmp/m.jsonl" >"$tmp/out" 2>&1
ok $? "ndgraph run configs/llama-tiny.yaml exits 0"
tail -2 "$tmp/out" | sed 's/^/# /'

python3 - "$tmp/m.jsonl" <<'PY'
import json, sys
train = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
first, last = train[0]["loss"], train[-1]["loss"]
print(f"# first loss {first:.4f}, last {last:.4f}")
sys.exit(0 if last < 0.85 * first else 1)
PY
ok $? "the training loss falls below 0.85 of its first value"

python3 - "$tmp/ll/step-60" <<'PY'
import json, struct, sys
d = sys.argv[1]
cfg = json.load(open(f"{d}/config.json"))
b = open(f"{d}/model.safetensors", "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
want = {"model.embed_tokens.weight": [256, 128], "model.layers.0.self_attn.q_proj.weight": [128, 128],
        "model.layers.0.self_attn.k_proj.weight": [64, 128], "model.layers.3.mlp.down_proj.weight": [128, 344],
        "model.layers.3.mlp.gate_proj.weight": [344, 128], "model.norm.weight": [128], "lm_head.weight": [256, 128]}
bad = [k for k, s in want.items() if h.get(k, {}).get("shape") != s]
print(f"# {cfg['architectures']} {cfg['model_type']} kv heads {cfg['num_key_value_heads']}; wrong: {bad}")
sys.exit(0 if cfg["architectures"] == ["LlamaForCausalLM"] and cfg["num_key_value_heads"] == 2 and not bad else 1)
PY
ok $? "the checkpoint has Hugging Face's Llama names, shapes and config.json"

ev=$("$ndgraph" eval "$srcdir/configs/llama-tiny.yaml" --checkpoint "$tmp/ll/step-60" --batches 2 2>&1)
ok $? "ndgraph eval reads the Llama checkpoint: $ev"

"$ndgraph" run "$srcdir/configs/llama-tiny.yaml" --resume "$tmp/ll" --set train.steps=62 --set train.eval_every=0 \
  --set train.save_dir="$tmp/ll" >"$tmp/out" 2>&1 && test -f "$tmp/ll/step-62/model.safetensors"
ok $? "ndgraph run --resume continues from the Llama checkpoint and saves step-62"
grep -q 'step-60' "$tmp/out"
ok $? "the resumed run names step-60"

mkdir -p "$tmp/theta" && cp "$tmp/ll/step-60/"* "$tmp/theta/"
python3 -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c['rope_theta']=500000.0; json.dump(c, open(p,'w'))" \
  "$tmp/theta/config.json"
"$ndgraph" eval "$srcdir/configs/llama-tiny.yaml" --checkpoint "$tmp/theta" --batches 1 >"$tmp/out" 2>&1
test $? -ne 0 && grep -q "$tmp/theta/config.json: rope_theta is 500000, the configuration has model.rope_theta 10000" "$tmp/out"
ok $? "a config.json with another rope_theta is refused naming the field and both values: $(head -1 "$tmp/out")"
done_testing
