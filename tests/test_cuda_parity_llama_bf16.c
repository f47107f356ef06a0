/* The mixed-node parity test of tests/test_device_parity.c for model.arch
 * llama under train.precision bf16, on a CUDA device (tests/cuda.mk): the
 * weights' casts, the GEMMs and the RMSNorm and SwiGLU bf16 stores on the GPU
 * with the rest of the step, the losses within 1e-4 of the CPU-only bf16
 * reference's. */
#define PARITY_MODEL "model.arch=llama", "model.n_kv_head=2", "model.intermediate_size=96", "train.precision=bf16"
#include "tests/test_device_parity.c"
