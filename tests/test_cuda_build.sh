#!/usr/bin/env bash
# A build with the CUDA backend: the library holds its ops table and the CUDA kernels as
# device code for sm_80, sm_89 and sm_90 plus PTX, it links cuBLAS and
# NCCL's runtime, and the StarPU it runs on has CUDA. (Wired only when
# configure turned the backend on.)
. "${ND_SRCDIR:-.}/tests/tap.sh"

lib="${ND_BUILDDIR:-.}/.libs/libndgraph.so"
objs=$(ls "${ND_BUILDDIR:-.}"/kernels/cuda/.libs/*.o 2>/dev/null)
[ -f "$lib" ] && [ -n "$objs" ]; ok $? "libndgraph.so and the nvcc objects exist"

# each cubin in the fat binary keeps its ptxas options ("-arch sm_90 ..."): one per .cu file and target
n_cu=$(ls "$srcdir"/kernels/cuda/*.cu | wc -l)
strings -a "$lib" | grep -o -- "-arch sm_[0-9]*" | sort | uniq -c >"$tmp/archs"
missing=
for arch in sm_80 sm_89 sm_90; do
  n=$(awk -v a="$arch" '$3 == a {print $1}' "$tmp/archs")
  [ "${n:-0}" -ge "$n_cu" ] || missing="$missing $arch(${n:-0} of $n_cu)"
done
[ -z "$missing" ]; ok $? "libndgraph.so has sm_80, sm_89 and sm_90 code for each of the $n_cu .cu files${missing:+ (missing:$missing)}"
# PTX is stored compressed: only cuobjdump (not in every toolkit install) lists it
cuobjdump=$(command -v cuobjdump || ls "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/cuobjdump" 2>/dev/null)
if [ -n "$cuobjdump" ]; then
  "$cuobjdump" --list-ptx "$lib" >"$tmp/ptx" 2>&1
  grep -q "sm_90\|compute_90" "$tmp/ptx"; ok $? "libndgraph.so has compute_90 PTX (for GPUs after sm_90)"
else
  ok 0 "# SKIP compute_90 PTX in libndgraph.so: no cuobjdump in this CUDA install to list it"
fi

nm "${ND_BUILDDIR:-.}"/kernels/cuda/.libs/*.o 2>/dev/null |
  awk '$2 == "T" {print $3}' | sort -u >"$tmp/syms"
want="nd_cuda_matmul_forward nd_cuda_layernorm_forward nd_cuda_attention_forward nd_cuda_attention_backward
nd_cuda_gelu_forward nd_cuda_embedding_backward nd_cuda_crossentropy_stats nd_cuda_adamw nd_cuda_sumsq
nd_cuda_rmsnorm_forward nd_cuda_rmsnorm_backward_input nd_cuda_rmsnorm_backward_weight nd_cuda_rope_forward
nd_cuda_rope_backward nd_cuda_swiglu_forward nd_cuda_swiglu_backward nd_cuda_attention_gqa_forward
nd_cuda_attention_gqa_backward nd_cuda_cast_bf16 nd_cuda_matmul_forward_bf16 nd_cuda_matmul_backward_input_bf16
nd_cuda_matmul_backward_weight_bf16"
missing=
for s in $want; do grep -qx "$s" "$tmp/syms" || missing="$missing $s"; done
[ -z "$missing" ]; ok $? "the CUDA launchers are built, GPT-2's, Llama's and bf16's${missing:+ (missing:$missing)}"

# the ops table that gives the codelets their CUDA implementations (kernels/cuda/backend.c)
nm "${ND_BUILDDIR:-.}/.libs/libndgraph_internal.a" 2>/dev/null | grep -q " [DR] nd__cuda_backend$"
ok $? "the library has the CUDA backend's ops table (nd__cuda_backend: the codelets' CUDA implementations)"

ldd "$lib" >"$tmp/ldd"
grep -q "libcublas" "$tmp/ldd" && grep -q "libcudart" "$tmp/ldd"
ok $? "libndgraph.so links cuBLAS and the CUDA runtime"
starpu=$(sed -n 's/.*\(libstarpu-1\.[34]\.so[^ ]*\) => \([^ ]*\).*/\2/p' "$tmp/ldd" | head -1)
[ -n "$starpu" ] && ldd "$starpu" | grep -q libcudart
ok $? "the StarPU it links ($starpu) has CUDA (links libcudart)"
"$ndgraph" --version | grep -q "^CUDA yes,"; ok $? "ndgraph --version: CUDA yes"
done_testing
