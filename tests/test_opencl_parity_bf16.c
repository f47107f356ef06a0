/* The mixed-node parity test of tests/test_device_parity.c under
 * train.precision bf16: on an OpenCL device the device runs the fp32 tasks
 * (attention among them), the CPU worker the GEMMs, casts and bf16 writers it
 * declines; on a CUDA device (test_cuda_parity_bf16, tests/cuda.mk) the GPU
 * runs them all. The losses equal the CPU-only bf16 reference's. */
#define PARITY_MODEL "train.precision=bf16"
#include "tests/test_device_parity.c"
