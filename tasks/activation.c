/* The MLP's activation (GeLU, tanh approximation). */
#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: out (n), inp (n) */
static void activation_fwd_cpu(void *buffers[], void *arg) {
  nd_gelu_forward(ND_F32(0), ND_F32(1), ND_CTX(arg)->task->a.ew.n);
}
ND_CODELET(activation_fwd, activation_fwd_cpu);

/* buffers: dinp (n), inp (n), dout (n) */
static void activation_bwd_cpu(void *buffers[], void *arg) {
  nd_gelu_backward(ND_F32(0), ND_F32(1), ND_F32(2), ND_CTX(arg)->task->a.ew.n);
}
ND_CODELET(activation_bwd, activation_bwd_cpu);
