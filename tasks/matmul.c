/* Linear layers: forward, input gradient (B) and weight gradient (W), run by
 * the implementation the kernel table selects (built-in: CBLAS). */
#include "tasks/codelets.h"

/* buffers: out (M, N), inp (M, K), weight, [bias (N)] */
ND_CODELET(matmul_fwd, nd__dispatch_cpu);

/* buffers: dinp (M, K), dout (M, N), weight */
ND_CODELET(matmul_bwd_in, nd__dispatch_cpu);

/* buffers: dweight, [dbias (N)], dout (M, N), inp (M, K) */
ND_CODELET(matmul_bwd_w, nd__dispatch_cpu);
