/* The MLP's activation: model.activation (GeLU, tanh approximation, unless a
 * plugin adds another), through the kernel table. */
#include "tasks/codelets.h"

/* buffers: out (n), inp (n) */
ND_CODELET(activation_fwd, nd__dispatch_cpu);

/* buffers: dinp (n), inp (n), dout (n) */
ND_CODELET(activation_bwd, nd__dispatch_cpu);
