#!/usr/bin/env python3
"""An independent Llama in PyTorch, built from a Hugging Face checkpoint
directory alone: config.json and model.safetensors, or
model-0000N-of-0000M.safetensors shards listed by model.safetensors.index.json
(F32, BF16, F16 or F64). Its modules carry Hugging Face's LlamaForCausalLM
names, so loading is strict: a missing, extra or misshapen tensor is an error.
The arithmetic is transformers' (RMSNorm, rotate_half rotary embeddings,
grouped-query causal attention with repeat_kv, SiLU-gated MLP), in float64.
Needs torch only; safetensors and transformers are used when importable (with
transformers, LlamaForCausalLM built from the same config.json must agree).
tests/test_torch_llama.sh runs it; tests/hf_llama_ref.py is the same program
in plain Python, with the same command line.

  torch_llama_ref.py CHECKPOINT_DIR FILE SEQ_LEN [FORMAT]
     prints, alone on a line, the mean cross-entropy of predicting tokens
     1..SEQ_LEN of FILE from those before them (the first SEQ_LEN + 1 tokens).
     FORMAT as ndgraph's data.format: text (a token per byte, the default),
     tokens-u16 or tokens-u32 (little-endian).
  torch_llama_ref.py --shard-bf16 CHECKPOINT_DIR OUT_DIR
     loads the checkpoint into the model and writes its weights as Hugging Face
     writes large models: bf16, two model-0000N-of-00002.safetensors shards,
     model.safetensors.index.json, and config.json (torch_dtype bfloat16); a
     tied head is not written twice.
Exit status: 0, 1 on a failed check, 2 on bad input."""
import json
import math
import os
import struct
import sys

import torch
from torch import nn

DTYPES = {"F64": torch.float64, "F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def fail(msg):
    print(f"torch_llama_ref.py: {msg}", file=sys.stderr)
    sys.exit(2)


def read_safetensors(path):
    """name -> tensor, by the format's definition (8-byte header length, JSON
    header, little-endian data) when the safetensors package is absent."""
    try:
        from safetensors.torch import load_file
        return load_file(path)
    except ImportError:
        pass
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    out = {}
    for name, e in json.loads(b[8:8 + n]).items():
        if name == "__metadata__":
            continue
        if e["dtype"] not in DTYPES:
            fail(f"{path}: {name}: dtype {e['dtype']} is not one of {', '.join(DTYPES)}")
        lo, hi = e["data_offsets"]
        raw = bytearray(b[8 + n + lo:8 + n + hi])
        t = torch.frombuffer(raw, dtype=DTYPES[e["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"])
    return out


def load_weights(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for f in files:
        out.update(read_safetensors(os.path.join(d, f)))
    return out


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, self.nh, self.kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = c["head_dim"]
        bias = c.get("attention_bias", False)
        self.q_proj = nn.Linear(C, self.nh * self.hd, bias=bias)
        self.k_proj = nn.Linear(C, self.kv * self.hd, bias=bias)
        self.v_proj = nn.Linear(C, self.kv * self.hd, bias=bias)
        self.o_proj = nn.Linear(self.nh * self.hd, C, bias=bias)

    def forward(self, x, cos, sin):  # x (B, T, C); cos, sin (T, hd)
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)  # (B, nh, T, hd)
        k = self.k_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)  # (B, kv, T, hd)
        v = self.v_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # repeat_kv: query head h reads key/value head h // (nh / kv)
        k = k.repeat_interleave(self.nh // self.kv, dim=1)
        v = v.repeat_interleave(self.nh // self.kv, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)  # (B, nh, T, T)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(s, dim=-1) @ v  # (B, nh, T, hd)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.nh * self.hd))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, I, bias = c["hidden_size"], c["intermediate_size"], c.get("mlp_bias", False)
        self.gate_proj = nn.Linear(C, I, bias=bias)
        self.up_proj = nn.Linear(C, I, bias=bias)
        self.down_proj = nn.Linear(I, C, bias=bias)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = Body(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids):  # ids (B, T) -> logits (B, T, vocab)
        hd, T = self.c["head_dim"], ids.shape[1]
        inv_freq = 1.0 / self.c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        if self.c["rope_type"] == "llama3":
            # Llama 3: a wavelength longer than context / low is stretched by
            # factor, one shorter than context / high kept, and between them
            # the weight on the unstretched frequency rises linearly in context / wavelength
            r = self.c["rope"]
            ctx, lo, hi = r["original_max_position_embeddings"], r["low_freq_factor"], r["high_freq_factor"]
            w = ((ctx * inv_freq / (2 * math.pi) - lo) / (hi - lo)).clamp(0.0, 1.0)
            inv_freq = w * inv_freq + (1 - w) * inv_freq / r["factor"]
        freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, hd / 2)
        emb = torch.cat((freqs, freqs), dim=-1)  # (T, hd)
        cos, sin = emb.cos().to(self.lm_head.weight.dtype), emb.sin().to(self.lm_head.weight.dtype)
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.model.norm(x))


def config(d):
    """config.json with transformers' defaults for the fields it may omit."""
    path = os.path.join(d, "config.json")
    try:
        with open(path) as f:
            c = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    if c.get("model_type") != "llama" or "LlamaForCausalLM" not in c.get("architectures", []):
        fail(f"{path}: not a LlamaForCausalLM (model_type {c.get('model_type')!r})")
    # transformers 5 writes the RoPE (and its theta) in rope_parameters, earlier versions in rope_scaling
    r = c.get("rope_parameters") or c.get("rope_scaling") or {}
    c["rope"], c["rope_type"] = r, r.get("rope_type", r.get("type", "default"))
    if c["rope_type"] not in ("default", "llama3"):
        fail(f"{path}: rope_type {c['rope_type']!r} is not implemented here")
    if "rope_theta" in r:
        c["rope_theta"] = r["rope_theta"]
    if c.get("hidden_act", "silu") != "silu":
        fail(f"{path}: hidden_act {c['hidden_act']!r}, expected silu")
    c.setdefault("num_key_value_heads", c["num_attention_heads"])
    c.setdefault("head_dim", None)
    c["head_dim"] = c["head_dim"] or c["hidden_size"] // c["num_attention_heads"]
    c.setdefault("rms_norm_eps", 1e-6)
    c.setdefault("rope_theta", 10000.0)
    c.setdefault("tie_word_embeddings", False)
    return c


def build(d):
    c = config(d)
    m = LlamaForCausalLM(c)
    w = load_weights(d)
    if c["tie_word_embeddings"]:
        if "lm_head.weight" in w:
            fail(f"{d}: lm_head.weight present but config.json ties it to model.embed_tokens.weight")
        w["lm_head.weight"] = w["model.embed_tokens.weight"]
    try:
        m.load_state_dict({k: v.to(torch.float32) for k, v in w.items()}, strict=True)
    except RuntimeError as e:
        fail(f"{d}: {e}".replace("\n", " "))
    return c, m, w


def tokens(path, n, fmt):
    width = {"text": "B", "tokens-u16": "H", "tokens-u32": "I"}.get(fmt)
    if width is None:
        fail(f"format {fmt!r}: expected text, tokens-u16 or tokens-u32")
    size = struct.calcsize(width)
    with open(path, "rb") as f:
        b = f.read(n * size)
    if len(b) < n * size:
        fail(f"{path}: {len(b) // size} tokens, need {n}")
    return list(struct.unpack(f"<{n}{width}", b))


def transformers_loss(d, c, w, ids):
    """The same loss from transformers' own LlamaForCausalLM, when installed."""
    try:
        from transformers import LlamaConfig
        from transformers import LlamaForCausalLM as HF
    except ImportError:
        return None
    hf = HF(LlamaConfig.from_pretrained(d)).to(torch.float64).eval()
    missing, unexpected = hf.load_state_dict({k: v.to(torch.float64) for k, v in w.items()}, strict=False)
    if missing or unexpected:
        fail(f"{d}: transformers' LlamaForCausalLM misses {missing} and does not take {unexpected}")
    with torch.no_grad():
        return nn.functional.cross_entropy(hf(input_ids=ids[:, :-1]).logits[0], ids[0, 1:]).item()


def shard_bf16(src, dst):
    c, m, _ = build(src)
    sd = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in m.state_dict().items()}
    if c["tie_word_embeddings"]:
        del sd["lm_head.weight"]
    names = sorted(sd)
    os.makedirs(dst, exist_ok=True)
    weight_map, total = {}, 0
    for k, part in enumerate((names[:len(names) // 2], names[len(names) // 2:])):
        fname = f"model-{k + 1:05d}-of-00002.safetensors"
        write_safetensors(os.path.join(dst, fname), {n: sd[n] for n in part})
        for n in part:
            weight_map[n] = fname
            total += sd[n].numel() * 2
    with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg["torch_dtype"] = "bfloat16"
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def write_safetensors(path, tensors):
    try:
        from safetensors.torch import save_file
        return save_file(tensors, path, metadata={"format": "pt"})
    except ImportError:
        pass
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        raw = struct.pack(f"<{t.numel()}h", *t.flatten().view(torch.int16).tolist())
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "--shard-bf16":
        return shard_bf16(args[1], args[2])
    if len(args) not in (3, 4) or not args[2].isdigit():
        fail("usage: torch_llama_ref.py CHECKPOINT_DIR FILE SEQ_LEN [FORMAT] | --shard-bf16 CHECKPOINT_DIR OUT_DIR")
    d, path, T = args[0], args[1], int(args[2])
    c, m, w = build(d)
    ids = torch.tensor([tokens(path, T + 1, args[3] if len(args) == 4 else "text")])  # (1, T + 1)
    if int(ids.max()) >= c["vocab_size"]:
        fail(f"{path}: token {int(ids.max())} is not below vocab_size {c['vocab_size']}")
    m = m.to(torch.float64).eval()
    with torch.no_grad():
        loss = nn.functional.cross_entropy(m(ids[:, :-1])[0], ids[0, 1:]).item()
    hf = transformers_loss(d, c, w, ids)
    if hf is not None:
        print(f"# transformers LlamaForCausalLM {hf!r}, this program {loss!r}", file=sys.stderr)
        # transformers keeps its RMSNorm and rotary frequencies in float32
        if abs(hf - loss) > 1e-5 * abs(loss):
            print("torch_llama_ref.py: transformers disagrees", file=sys.stderr)
            sys.exit(1)
    print(f"{loss:.9f}")


main()
