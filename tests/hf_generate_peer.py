#!/usr/bin/env python3
"""Peer check of `ndgraph generate` (docs/generate.md): makes a small GPT-2 and
Llama with transformers, saves them, and compares ndgraph's greedy ids with
transformers' generate(do_sample=False), one rank and tensor-parallel 2.
The weights are drawn with a standard deviation of 0.2 (transformers' default
0.02 leaves the logits so near uniform that greedy GPT-2 repeats one id), so
the 24 ids vary; the check fails when they do not (at least 8 distinct ones)
or when the top two logits of a step are too close for an ordering to mean
anything (under 1e-3 apart).
Usage: hf_generate_peer.py NDGRAPH WORKDIR. Exit 77 (skip) without transformers."""
import subprocess, sys

try:
    import torch, transformers
except ImportError as e:
    print(f"# skip: {e}")
    sys.exit(77)

ndgraph, work = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
V, T, N, prompt = 300, 64, 24, [5, 17, 42, 99, 7, 250, 3, 11]
models = {
    "gpt2": (transformers.GPT2Config(vocab_size=V, n_positions=T, n_embd=64, n_layer=2, n_head=4,
                                     activation_function="gelu_new", initializer_range=0.2),
             ["model.arch=gpt2"]),
    "llama": (transformers.LlamaConfig(vocab_size=V, max_position_embeddings=T, hidden_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
                                       tie_word_embeddings=False, initializer_range=0.2),
              ["model.arch=llama", "model.rms_norm_eps=1e-6", "model.n_kv_head=2", "model.intermediate_size=96",
               "model.tie_word_embeddings=false"]),
}
failed = 0
for name, (cfg, sets) in models.items():
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    d = f"{work}/{name}"
    model.save_pretrained(d)
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=N, do_sample=False, pad_token_id=0)
        top2 = model(out).logits[0, len(prompt) - 1:-1].topk(2).values
    want, margin = out[0, len(prompt):].tolist(), (top2[:, 0] - top2[:, 1]).min().item()
    varied = len(set(want)) >= 8 and margin > 1e-3
    failed += not varied
    print(f"{'ok' if varied else 'not ok'} - {name}: transformers' {N} ids hold {len(set(want))} distinct ones, "
          f"the top two logits at least {margin:.2e} apart")
    for tp in (1, 2):
        args = [ndgraph, "generate", "--checkpoint", d, "--prompt-ids", ",".join(map(str, prompt)),
                "--tokens", str(N), "--temperature", "0"]
        for s in sets + [f"model.vocab_size={V}", "model.n_layer=2", "model.n_embd=64", "model.n_head=4",
                         f"model.seq_len={T}", "parallelism.pipeline_parallel_size=1",
                         f"parallelism.tensor_parallel_size={tp}", "runtime.tune=false"]:
            args += ["--set", s]
        r = subprocess.run(args, capture_output=True, text=True)
        got = [int(x) for x in r.stdout.split()] if r.returncode == 0 else None
        ok = got == want
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} - {name} tp {tp}: ndgraph {got} transformers {want}"
              + ("" if r.returncode == 0 else f" ({r.stderr.strip()})"))
sys.exit(1 if failed else 0)
