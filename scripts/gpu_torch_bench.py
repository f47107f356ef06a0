#!/usr/bin/env python3
"""The PyTorch peer of ndgraph's GPU benchmark (scripts/gpu-check.sh).

One training step (forward, backward, fused AdamW) of the same model, batch
and sequence length as ndgraph's rows, timed in eager mode and under
torch.compile, in fp32, TF32 and bf16 autocast (torch.autocast(bfloat16),
fp32 master weights), with scaled_dot_product_attention:
  gpt2   GPT-2 small: 12 layers, n_embd 768, 12 heads, seq_len 1024, vocab 50257
  llama  a Llama of about 1B parameters: transformers' LlamaForCausalLM
         (attn_implementation="sdpa"), 16 layers, n_embd 2048, 32 heads,
         8 key/value heads, intermediate 5632, vocab 32000, seq_len 2048
The GEMM peak of each precision (8192^3 torch.matmul) is measured in the
same run; MFU is against it. Prints one Markdown row per measurement
(|what|value|note|), and a failing mode is a row, not the end of the table.

usage: gpu_torch_bench.py MODEL BATCH PRECISIONS MODES [--peaks] [--smoke]
  e.g. gpu_torch_bench.py gpt2 8 fp32,tf32,bf16 eager,compile --peaks
--smoke: a tiny model on whatever device is there (a check of this script)."""
import argparse
import contextlib
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("| PyTorch | skipped | torch is not importable here |")
    sys.exit(0)

ap = argparse.ArgumentParser()
ap.add_argument("model", choices=["gpt2", "llama"])
ap.add_argument("batch", type=int)
ap.add_argument("precisions")
ap.add_argument("modes")
ap.add_argument("--peaks", action="store_true", help="also print the GEMM peak of each precision")
ap.add_argument("--smoke", action="store_true", help="a tiny model, any device")
args = ap.parse_args()

dev = "cuda" if torch.cuda.is_available() else "cpu"
if dev == "cpu" and not args.smoke:
    print("| PyTorch | skipped | no CUDA device |")
    sys.exit(0)

if args.model == "gpt2":
    L, C, NH, KV, I, T, V = (2, 64, 4, 4, 256, 64, 512) if args.smoke else (12, 768, 12, 12, 3072, 1024, 50257)
else:
    L, C, NH, KV, I, T, V = (2, 64, 4, 2, 160, 64, 512) if args.smoke else (16, 2048, 32, 8, 5632, 2048, 32000)
B = args.batch


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.out = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        sh = lambda t: t.view(B, T, NH, C // NH).transpose(1, 2)
        a = F.scaled_dot_product_attention(sh(q), sh(k), sh(v), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, V).float(), targets.view(-1))


class Llama(nn.Module):
    """transformers' own model, so that the peer is what its users run."""

    def __init__(self):
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM
        cfg = LlamaConfig(vocab_size=V, hidden_size=C, intermediate_size=I, num_hidden_layers=L,
                          num_attention_heads=NH, num_key_value_heads=KV, max_position_embeddings=T,
                          tie_word_embeddings=False)
        self.m = LlamaForCausalLM._from_config(cfg, attn_implementation="sdpa", torch_dtype=torch.float32)

    def forward(self, idx, targets):
        logits = self.m(input_ids=idx).logits
        return F.cross_entropy(logits.view(-1, V).float(), targets.view(-1))


def flops_per_token():
    """6 per weight of the GEMMs (forward and backward), plus causal
    attention's half of 12 L T C."""
    per_layer = C * (C + 2 * C * KV // NH) + C * C + (3 if args.model == "llama" else 2) * C * I
    return 6 * (L * per_layer + V * C) + 6 * L * T * C


def set_precision(p):
    tf32 = p == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return torch.autocast(device_type=dev, dtype=torch.bfloat16) if p == "bf16" else contextlib.nullcontext()


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


def step_time(compiled, precision):
    ctx = set_precision(precision)
    torch.manual_seed(0)
    model = (GPT() if args.model == "gpt2" else Llama()).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=dev == "cuda")
    fn = torch.compile(model) if compiled else model
    idx = torch.randint(0, V, (B, T), device=dev)
    tgt = torch.randint(0, V, (B, T), device=dev)

    def step():
        with ctx:
            loss = fn(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    # compiled: a short warm-up and few steps (the compile itself is the cost)
    warm, n = (2, 4) if compiled else (3, 8)
    for _ in range(warm):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    s = (time.perf_counter() - t0) / n
    del model, opt, fn
    if dev == "cuda":
        torch.cuda.empty_cache()
    return s


def gemm_peak(precision):
    set_precision(precision)
    n = 1024 if args.smoke else 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16 if precision == "bf16" else torch.float32)
    for _ in range(2):
        a @ a
    sync()
    t0 = time.perf_counter()
    for _ in range(5):
        a @ a
    sync()
    return 2 * n**3 * 5 / (time.perf_counter() - t0) / 1e12


LABEL = {"fp32": "fp32", "tf32": "TF32", "bf16": "bf16 autocast"}
precisions = args.precisions.split(",")
modes = args.modes.split(",")
if args.peaks:
    name = torch.cuda.get_device_properties(0).name if dev == "cuda" else "CPU"
    print(f"| device | {name} | torch {torch.__version__} |")
peak = {p: gemm_peak(p) for p in precisions}
if args.peaks:
    for p in precisions:
        print(f"| GEMM peak {LABEL[p]} (8192^3) | {peak[p]:.1f} TFLOP/s | torch.matmul |")
what = "GPT-2 small" if args.model == "gpt2" else "Llama ~1B (transformers, sdpa)"
for mode in modes:
    for p in precisions:
        name = f"PyTorch {what} {'torch.compile' if mode == 'compile' else 'eager'} {LABEL[p]}"
        try:
            s = step_time(mode == "compile", p)
        except Exception as e:  # a failing mode is a row, not the end of the table
            print(f"| {name} | failed | {type(e).__name__}: {str(e)[:80]} |")
            continue
        tps = B * T / s
        tf = tps * flops_per_token() / 1e12
        print(f"| {name} (B {B}, T {T}) | {tps:,.0f} tokens/s | {s * 1e3:.1f} ms/step, "
              f"{tf:.1f} TFLOP/s, MFU {tf / peak[p]:.0%} of the {LABEL[p]} GEMM peak |", flush=True)
