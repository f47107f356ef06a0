#!/usr/bin/env python3
"""An independent Llama forward, built from a Hugging Face checkpoint directory
alone (config.json and model.safetensors, or model-0000N-of-0000M.safetensors
shards with model.safetensors.index.json; F32, BF16 or F16), in plain Python
so that it runs without PyTorch: the transformers LlamaForCausalLM
arithmetic (RMSNorm, rotate_half rotary embeddings, grouped-query causal
attention, SiLU-gated MLP). Prints the mean cross-entropy of predicting each
byte of FILE from the ones before it (the first seq_len + 1 bytes).

  hf_llama_ref.py CHECKPOINT_DIR FILE SEQ_LEN
  hf_llama_ref.py --shard-bf16 CHECKPOINT_DIR OUT_DIR
     writes the checkpoint as Hugging Face does for large models: bf16 (rounded
     to nearest even), two model-0000N-of-00002.safetensors shards and
     model.safetensors.index.json, with its config.json."""
import json
import math
import os
import struct
import sys


def load(d):
    """name -> (shape, flat list of floats)"""
    index = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    out = {}
    for f in files:
        b = open(os.path.join(d, f), "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        header = json.loads(b[8:8 + n])
        for name, e in header.items():
            if name == "__metadata__":
                continue
            lo, hi = e["data_offsets"]
            raw = b[8 + n + lo:8 + n + hi]
            if e["dtype"] == "F32":
                vals = list(struct.unpack(f"<{len(raw) // 4}f", raw))
            elif e["dtype"] == "BF16":
                vals = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
            elif e["dtype"] == "F16":
                vals = list(struct.unpack(f"<{len(raw) // 2}e", raw))
            else:
                raise SystemExit(f"{f}: {name}: dtype {e['dtype']}")
            out[name] = (e["shape"], vals)
    return out


def linear(x, w):
    """x (T, in) . w^T with w [out, in] flat"""
    (o, i), wv = w
    rows = [wv[r * i:(r + 1) * i] for r in range(o)]
    return [[sum(a * b for a, b in zip(xt, row)) for row in rows] for xt in x]


def rms(x, w, eps):
    out = []
    for xt in x:
        s = 1.0 / math.sqrt(sum(v * v for v in xt) / len(xt) + eps)
        out.append([wv * v * s for wv, v in zip(w[1], xt)])
    return out


def frequencies(cfg, hs):
    """theta^(-2i/hs) for each pair i, with Llama 3's scaling where config.json
    names it (rope_parameters, or rope_scaling before transformers 5): a
    wavelength 2 pi / f longer than context / low_freq_factor is stretched by
    factor, one shorter than context / high_freq_factor kept, and in between
    f is mixed with f / factor, its weight (context / wavelength - low) /
    (high - low) going from 0 to 1."""
    r = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    theta = r.get("rope_theta", cfg.get("rope_theta", 10000.0))
    kind = r.get("rope_type", r.get("type", "default"))
    assert kind in ("default", "llama3"), f"rope_type {kind} is not implemented here"
    out = []
    for i in range(hs // 2):
        f = theta ** (-2.0 * i / hs)
        if kind == "llama3":
            ctx, lo, hi, k = (r["original_max_position_embeddings"], r["low_freq_factor"], r["high_freq_factor"],
                              r["factor"])
            wavelength = 2 * math.pi / f
            if wavelength > ctx / lo:
                f = f / k
            elif wavelength >= ctx / hi:
                w = (ctx / wavelength - lo) / (hi - lo)
                f = w * f + (1 - w) * f / k
        out.append(f)
    return out


def rope(x, heads, hs, freq):
    half = hs // 2
    out = []
    for t, xt in enumerate(x):
        y = list(xt)
        for h in range(heads):
            for i in range(half):
                a = t * freq[i]
                x0, x1 = xt[h * hs + i], xt[h * hs + i + half]
                y[h * hs + i] = x0 * math.cos(a) - x1 * math.sin(a)
                y[h * hs + i + half] = x1 * math.cos(a) + x0 * math.sin(a)
        out.append(y)
    return out


def shard_bf16(src, dst):
    W = load(src)
    os.makedirs(dst, exist_ok=True)
    names = sorted(W)
    parts = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for k, part in enumerate(parts):
        fname = f"model-{k + 1:05d}-of-00002.safetensors"
        header, blobs, at = {}, [], 0
        for name in part:
            shape, vals = W[name]
            raw = bytearray()
            for v in vals:
                u = struct.unpack("<I", struct.pack("<f", v))[0]
                u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
                raw += struct.pack("<H", u)
            header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [at, at + len(raw)]}
            blobs.append(bytes(raw))
            at += len(raw)
            weight_map[name] = fname
        h = json.dumps(header).encode()
        h += b" " * (-len(h) % 8)
        with open(os.path.join(dst, fname), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    json.dump({"metadata": {}, "weight_map": weight_map}, open(os.path.join(dst, "model.safetensors.index.json"), "w"))
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["torch_dtype"] = "bfloat16"
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))


def main():
    if sys.argv[1] == "--shard-bf16":
        return shard_bf16(sys.argv[2], sys.argv[3])
    d, path, T = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cfg = json.load(open(os.path.join(d, "config.json")))
    assert cfg["model_type"] == "llama" and cfg["architectures"] == ["LlamaForCausalLM"]
    W = load(d)
    C, NH, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hs, eps = C // NH, cfg["rms_norm_eps"]
    freq = frequencies(cfg, hs)
    toks = list(open(path, "rb").read()[:T + 1])
    emb = W["model.embed_tokens.weight"][1]
    x = [emb[t * C:(t + 1) * C] for t in toks[:T]]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, W[p + "input_layernorm.weight"], eps)
        q = rope(linear(h, W[p + "self_attn.q_proj.weight"]), NH, hs, freq)
        k = rope(linear(h, W[p + "self_attn.k_proj.weight"]), KV, hs, freq)
        v = linear(h, W[p + "self_attn.v_proj.weight"])
        y = [[0.0] * C for _ in range(T)]
        for hd in range(NH):
            g = hd // (NH // KV)
            for t in range(T):
                s = [sum(q[t][hd * hs + i] * k[u][g * hs + i] for i in range(hs)) / math.sqrt(hs) for u in range(t + 1)]
                m = max(s)
                e = [math.exp(z - m) for z in s]
                z = sum(e)
                for i in range(hs):
                    y[t][hd * hs + i] = sum(e[u] / z * v[u][g * hs + i] for u in range(t + 1))
        o = linear(y, W[p + "self_attn.o_proj.weight"])
        x = [[a + b for a, b in zip(xt, ot)] for xt, ot in zip(x, o)]
        h = rms(x, W[p + "post_attention_layernorm.weight"], eps)
        gate, up = linear(h, W[p + "mlp.gate_proj.weight"]), linear(h, W[p + "mlp.up_proj.weight"])
        act = [[gv / (1.0 + math.exp(-gv)) * uv for gv, uv in zip(gt, ut)] for gt, ut in zip(gate, up)]
        dn = linear(act, W[p + "mlp.down_proj.weight"])
        x = [[a + b for a, b in zip(xt, ot)] for xt, ot in zip(x, dn)]
    h = rms(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight" if cfg["tie_word_embeddings"] else "lm_head.weight"]
    logits = linear(h, head)
    loss = 0.0
    for t in range(T):
        m = max(logits[t])
        loss += m + math.log(sum(math.exp(z - m) for z in logits[t])) - logits[t][toks[t + 1]]
    print(f"{loss / T:.9f}")


main()
