#!/usr/bin/env python3
"""The peer of ndgraph's train.precision bf16: PyTorch's own mixed precision,
torch.autocast(device_type="cpu", dtype=torch.bfloat16), on transformers'
GPT2LMHeadModel loaded from an ndgraph checkpoint directory, trained on the
same sequences with the same AdamW, learning rate and clipping as ndgraph.
Prints one line per step (its loss, ndgraph's, the relative difference) and
checks each within the tolerance. tests/test_bf16_autocast.sh runs it.

  bf16_autocast_ref.py CHECKPOINT_DIR DATA_FILE METRICS_JSONL STEPS BATCH LR WARMUP
      CHECKPOINT_DIR: the weights before the first step (config.json,
      model.safetensors); DATA_FILE: data.format text (a token per byte);
      METRICS_JSONL: ndgraph's --metrics of the same run; BATCH: sequences a
      step (the global batch). AdamW's betas (0.9, 0.95), epsilon 1e-8, weight
      decay 0.1 on matrices and embeddings, clipping at global norm 1.0 and the
      linear warm-up are ndgraph's quick-start defaults.
Exit status: 0, 1 when a loss is off by more than 1e-3 relative, 2 on bad input."""
import json
import sys

import torch
import torch.nn.functional as F
from transformers import GPT2LMHeadModel

TOL = 1e-3


def main():
    if len(sys.argv) != 8:
        print(__doc__, file=sys.stderr)
        return 2
    ckpt, data, metrics = sys.argv[1:4]
    steps, batch = int(sys.argv[4]), int(sys.argv[5])
    lr, warmup = float(sys.argv[6]), int(sys.argv[7])
    torch.manual_seed(0)
    model = GPT2LMHeadModel.from_pretrained(ckpt, torch_dtype=torch.float32, attn_implementation="eager")
    model.eval()  # no dropout; gradients are still taken
    T = int(model.config.n_ctx)  # ndgraph's model.seq_len
    tokens = torch.tensor(list(open(data, "rb").read()), dtype=torch.long)
    n_seq = (len(tokens) - 1) // T
    theirs = [json.loads(l)["loss"] for l in open(metrics) if '"loss"' in l]
    if len(theirs) < steps:
        print(f"bf16_autocast_ref.py: {metrics}: {len(theirs)} losses, need {steps}", file=sys.stderr)
        return 2
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95), eps=1e-8)
    worst, bad = 0.0, 0
    for s in range(steps):
        seqs = [(s * batch + i) % n_seq for i in range(batch)]
        x = torch.stack([tokens[k * T:k * T + T] for k in seqs])
        y = torch.stack([tokens[k * T + 1:k * T + T + 1] for k in seqs])
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            logits = model(x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters()))
        if norm > 1.0:  # ndgraph's clipping: max_norm / norm, no epsilon
            for p in model.parameters():
                p.grad.mul_(float(1.0 / norm))
        for g in opt.param_groups:
            g["lr"] = lr * (s + 1) / warmup if s < warmup else lr
        opt.step()
        rel = abs(loss.item() - theirs[s]) / theirs[s]
        worst = max(worst, rel)
        bad += rel > TOL
        print(f"step {s + 1}: torch autocast bf16 {loss.item():.6f}, ndgraph bf16 {theirs[s]:.6f}, "
              f"relative difference {rel:.2e}")
    print(f"worst relative difference {worst:.2e} (tolerance {TOL:g})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
