/* Internal: the CUDA backend (cuBLAS GEMMs, NCCL all-reduces, CUDA C
 * kernels; docs/cuda.md). Compiled when configure finds nvcc, cuBLAS, NCCL
 * and a StarPU with CUDA (ND_HAVE_CUDA). */
#ifndef ND_KERNELS_CUDA_CUDA_H
#define ND_KERNELS_CUDA_CUDA_H

#include "ndconfig.h"

#ifdef ND_HAVE_CUDA
/* CUDA devices on this machine: 0 when there are none, or no driver. */
int nd_cuda_device_count(void);
#endif

#endif
