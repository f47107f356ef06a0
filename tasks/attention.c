/* Causal self-attention over a tensor rank's heads, run by the implementation
 * the kernel table selects. */
#include "tasks/codelets.h"

/* buffers: out (B, T, NH*hs), att (B, NH, T, T), qkv (B, T, 3*NH*hs) */
ND_CODELET(attention_fwd, nd__dispatch_cpu);

/* buffers: dqkv (B, T, 3*NH*hs), datt (B, NH, T, T) scratch, dout (B, T, NH*hs), qkv, att */
ND_CODELET(attention_bwd, nd__dispatch_cpu);
