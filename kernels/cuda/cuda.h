/* Internal: the CUDA backend (cuBLAS GEMMs, NCCL all-reduces, CUDA C
 * kernels; docs/cuda.md). Compiled when configure finds nvcc, cuBLAS, NCCL
 * and a StarPU with CUDA (ND_HAVE_CUDA). */
#ifndef ND_KERNELS_CUDA_CUDA_H
#define ND_KERNELS_CUDA_CUDA_H

#include "common/error.h"
#include "ndconfig.h"
#include "ndgraph/kernel.h"

#ifdef ND_HAVE_CUDA
/* CUDA devices on this machine: 0 when there are none, or no driver. */
int nd_cuda_device_count(void);
/* kernel-check of a plugin's CUDA kernel (the backend's check_call). */
int nd_cuda_check_call(nd_kernel_fn fn, nd_tensor_desc *d, int n, nd_kernel_args *a, nd_error *err);
#endif

#endif
