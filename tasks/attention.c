/* Causal self-attention over a tensor rank's heads. */
#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: out (B, T, NH*hs), att (B, NH, T, T), qkv (B, T, 3*NH*hs) */
static void attention_fwd_cpu(void *buffers[], void *arg) {
  const struct nd_attn_args *a = &ND_CTX(arg)->task->a.attn;
  nd_attention_forward(ND_F32(0), ND_F32(1), ND_F32(2), a->B, a->T, a->NH, a->hs);
}
ND_CODELET(attention_fwd, attention_fwd_cpu);

/* buffers: dqkv (B, T, 3*NH*hs), datt (B, NH, T, T) scratch, dout (B, T, NH*hs), qkv, att */
static void attention_bwd_cpu(void *buffers[], void *arg) {
  const struct nd_attn_args *a = &ND_CTX(arg)->task->a.attn;
  nd_attention_backward(ND_F32(0), ND_F32(1), ND_F32(2), ND_F32(3), ND_F32(4), a->B, a->T, a->NH, a->hs);
}
ND_CODELET(attention_bwd, attention_bwd_cpu);
