/* The parity test of tests/test_parity.c for a Llama whose head is the token
 * embedding (model.tie_word_embeddings): with pipeline stages the embedding
 * lives on the first stage and the head on the last, and their two gradients
 * are summed between them (graph/optim.c), which every pp 2 layout checks. */
#define PARITY_MODEL \
  "model.arch=llama", "model.n_kv_head=2", "model.intermediate_size=96", "model.tie_word_embeddings=true"
#define PARITY_MAX_TP 2 /* tensor_parallel_size must divide n_kv_head */
#include "tests/test_parity.c"
