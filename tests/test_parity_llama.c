/* The parity test of tests/test_parity.c for model.arch llama: grouped-query
 * attention (2 key/value heads for 4 query heads), rotary embeddings, RMSNorm,
 * the gated SiLU MLP and an untied head, in every layout. */
#define PARITY_MODEL  "model.arch=llama", "model.n_kv_head=2", "model.intermediate_size=96"
#define PARITY_MAX_TP 2 /* tensor_parallel_size must divide n_kv_head */
#include "tests/test_parity.c"
