/* The residual add. Its backward is the identity, expressed by the graph. */
#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: out (n), a (n), b (n) */
static void residual_fwd_cpu(void *buffers[], void *arg) {
  nd_residual_forward(ND_F32(0), ND_F32(1), ND_F32(2), ND_CTX(arg)->task->a.ew.n);
}
ND_CODELET(residual_fwd, residual_fwd_cpu);
