/* The mixed-node parity test of tests/test_device_parity.c for model.arch
 * llama: RMSNorm, rotary embeddings, the gated MLP and grouped-query attention
 * (2 key/value heads for 4 query heads) on the device: OpenCL, or CUDA with
 * ND_TEST_CUDA (test_cuda_parity_llama, tests/cuda.mk). */
#define PARITY_MODEL "model.arch=llama", "model.n_kv_head=2", "model.intermediate_size=96"
#include "tests/test_device_parity.c"
