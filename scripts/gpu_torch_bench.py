#!/usr/bin/env python3
"""The PyTorch peer of ndgraph's GPU benchmark (scripts/gpu-check.sh): one
GPT-2-small training step (12 layers, n_embd 768, 12 heads, seq_len 1024,
vocab 50257, AdamW) timed in eager mode and under torch.compile, fp32 and
TF32, plus the cuBLAS fp32/TF32 GEMM peak at 8192^3 measured in the same
run. Prints one table row per measurement: |what|value|note|."""
import math
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("| PyTorch | skipped | torch is not importable here |")
    sys.exit(0)

if not torch.cuda.is_available():
    print("| PyTorch | skipped | no CUDA device |")
    sys.exit(0)

L, C, NH, T, V = 12, 768, 12, 1024, 50257
B = int(sys.argv[1]) if len(sys.argv) > 1 else 8
dev = "cuda"


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
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


def flops_per_token():
    n = L * 12 * C * C + V * C  # weights in the GEMMs
    return 6 * n + 6 * L * T * C  # forward + backward, attention's T x T


def step_time(compiled, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(0)
    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    fn = torch.compile(model) if compiled else model
    idx = torch.randint(0, V, (B, T), device=dev)
    tgt = torch.randint(0, V, (B, T), device=dev)

    def step():
        loss = fn(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    n, t0 = 10, time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


def gemm_peak(tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(8192, 8192, device=dev)
    for _ in range(2):
        a @ a
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        a @ a
    torch.cuda.synchronize()
    return 2 * 8192**3 * 5 / (time.perf_counter() - t0) / 1e12


props = torch.cuda.get_device_properties(0)
print(f"| GPU | {props.name} | {props.total_memory / 2**30:.0f} GiB, torch {torch.__version__} |")
peak = {tf32: gemm_peak(tf32) for tf32 in (False, True)}
for tf32 in (False, True):
    print(f"| cuBLAS GEMM peak {'TF32' if tf32 else 'fp32'} (8192^3) | {peak[tf32]:.1f} TFLOP/s | torch.matmul |")
for compiled in (False, True):
    for tf32 in (False, True):
        name = f"PyTorch {'torch.compile' if compiled else 'eager'} {'TF32' if tf32 else 'fp32'}"
        try:
            s = step_time(compiled, tf32)
        except Exception as e:  # a failing mode is a row, not the end of the table
            print(f"| {name} | failed | {type(e).__name__}: {str(e)[:80]} |")
            continue
        tps = B * T / s
        tf = tps * flops_per_token() / 1e12
        print(f"| {name} (B {B}, T {T}) | {tps:,.0f} tokens/s | {s * 1e3:.1f} ms/step, "
              f"{tf:.1f} TFLOP/s, {tf / peak[tf32]:.0%} of the GEMM peak |")
