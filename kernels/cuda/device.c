/* The CUDA devices of this machine, counted before StarPU starts: the CPU
 * workers get the cores their driver threads leave. */
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda.h"

int nd_cuda_device_count(void) {
  int n = 0;
  /* no driver (a machine without a GPU) reads as no device */
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
