/* The residual add. Its backward is the identity, expressed by the graph. */
#include "tasks/codelets.h"

/* buffers: out (n), a (n), b (n) */
ND_CODELET(residual_fwd, nd__dispatch_cpu);
