/* LayerNorm: forward, input gradient (B) and weight gradient (W), run by the
 * implementation the kernel table selects. */
#include "tasks/codelets.h"

/* buffers: out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C) */
ND_CODELET(layernorm_fwd, nd__dispatch_cpu);

/* buffers: dinp (N, C), dout (N, C), inp (N, C), weight (C), mean (N), rstd (N), [dskip (N, C)] */
ND_CODELET(layernorm_bwd_in, nd__dispatch_cpu);

/* buffers: dweight (C), dbias (C), dout (N, C), inp (N, C), mean (N), rstd (N) */
ND_CODELET(layernorm_bwd_w, nd__dispatch_cpu);
