#!/usr/bin/env bash
# tests/test_hf_llama.sh's checks with the PyTorch reference,
# tests/torch_llama_ref.py: ndgraph's Llama checkpoint gives the same loss in
# PyTorch, and the bf16 shards PyTorch writes fine-tune in ndgraph. Skipped
# where python3 cannot import torch.
if ! err=$(python3 -c 'import torch' 2>&1); then
  echo "1..0 # SKIP python3 cannot import torch (${err##*$'\n'})"
  exit 0
fi
ND_LLAMA_REF=torch_llama_ref.py exec bash "${ND_SRCDIR:-.}/tests/test_hf_llama.sh"
