/* tests/test_parity_bf16.c for model.arch llama: RMSNorm and the gated SiLU
 * MLP write their GEMM inputs in bf16, in every layout. */
#define PARITY_MODEL \
  "model.arch=llama", "model.n_kv_head=2", "model.intermediate_size=96", "train.precision=bf16"
#define PARITY_MAX_TP   2
#define PARITY_GRAD_TOL 1e-3
#include "tests/test_parity.c"
