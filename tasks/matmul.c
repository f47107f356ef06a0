/* Linear layers: forward, input gradient (B) and weight gradient (W). */
#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: out (M, N), inp (M, K), weight, [bias (N)] */
static void matmul_fwd_cpu(void *buffers[], void *arg) {
  const struct nd_mm_args *a = &ND_CTX(arg)->task->a.mm;
  nd_matmul_forward(ND_F32(0), ND_F32(1), ND_F32(2), a->has_bias ? ND_F32(3) : NULL, a->M, a->K, a->N,
                    a->trans_w);
}
ND_CODELET(matmul_fwd, matmul_fwd_cpu);

/* buffers: dinp (M, K), dout (M, N), weight */
static void matmul_bwd_in_cpu(void *buffers[], void *arg) {
  const struct nd_mm_args *a = &ND_CTX(arg)->task->a.mm;
  nd_matmul_backward_input(ND_F32(0), ND_F32(1), ND_F32(2), a->M, a->K, a->N, a->trans_w, 0.0f);
}
ND_CODELET(matmul_bwd_in, matmul_bwd_in_cpu);

/* buffers: dweight, [dbias (N)], dout (M, N), inp (M, K) */
static void matmul_bwd_w_cpu(void *buffers[], void *arg) {
  const struct nd_mm_args *a = &ND_CTX(arg)->task->a.mm;
  int hb = a->has_bias;
  nd_matmul_backward_weight(ND_F32(0), hb ? ND_F32(1) : NULL, ND_F32(1 + hb), ND_F32(2 + hb), a->M, a->K,
                            a->N, a->trans_w, a->beta);
}
ND_CODELET(matmul_bwd_w, matmul_bwd_w_cpu);
