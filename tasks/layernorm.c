/* LayerNorm: forward, input gradient (B) and weight gradient (W). */
#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C) */
static void layernorm_fwd_cpu(void *buffers[], void *arg) {
  const struct nd_ln_args *a = &ND_CTX(arg)->task->a.ln;
  nd_layernorm_forward(ND_F32(0), ND_F32(1), ND_F32(2), ND_F32(3), ND_F32(4), ND_F32(5), a->N, a->C);
}
ND_CODELET(layernorm_fwd, layernorm_fwd_cpu);

/* buffers: dinp (N, C), dout (N, C), inp (N, C), weight (C), mean (N), rstd (N), [dskip (N, C)] */
static void layernorm_bwd_in_cpu(void *buffers[], void *arg) {
  const struct nd_ln_args *a = &ND_CTX(arg)->task->a.ln;
  nd_layernorm_backward_input(ND_F32(0), a->has_skip ? ND_F32(6) : NULL, ND_F32(1), ND_F32(2), ND_F32(3),
                              ND_F32(4), ND_F32(5), a->N, a->C);
}
ND_CODELET(layernorm_bwd_in, layernorm_bwd_in_cpu);

/* buffers: dweight (C), dbias (C), dout (N, C), inp (N, C), mean (N), rstd (N) */
static void layernorm_bwd_w_cpu(void *buffers[], void *arg) {
  const struct nd_ln_args *a = &ND_CTX(arg)->task->a.ln;
  nd_layernorm_backward_weight(ND_F32(0), ND_F32(1), ND_F32(2), ND_F32(3), ND_F32(4), ND_F32(5), a->N, a->C,
                               a->beta);
}
ND_CODELET(layernorm_bwd_w, layernorm_bwd_w_cpu);
