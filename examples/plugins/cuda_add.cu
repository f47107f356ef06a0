/* An example ndgraph kernel plugin with a CUDA implementation: the residual
 * add (out = a + b) as "cuda_add", registered for the CPU and for CUDA
 * devices under the same name, so that kernels.override selects both. On
 * CUDA the descriptors' data are device pointers and a->queue the calling
 * worker's cudaStream_t: the kernel enqueues on it and returns.
 *
 *   kernels.plugins: [examples/plugins/libcuda_add.so]
 *   kernels.override: {residual_fwd: cuda_add}
 *   runtime.cuda_devices: 1
 *
 * `ndgraph kernel-check libcuda_add.so cuda_add` checks both against
 * ndgraph's reference. Build: nvcc -shared -Xcompiler -fPIC cuda_add.cu. */
#include <cuda_runtime_api.h>
#include <stdint.h>

#include <ndgraph/kernel.h>

static int add_cpu(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = (float *)t[0].data;                                         // (n)
  const float *x = (const float *)t[1].data, *y = (const float *)t[2].data; // (n), (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = x[i] + y[i];
  return 0;
}

__global__ static void add(float *out, const float *x, const float *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = x[i] + y[i];
}

static int add_cuda(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  int64_t len = t[0].shape[0];
  int blocks = (int)((len + 255) / 256 < 1024 ? (len + 255) / 256 : 1024);
  add<<<blocks > 0 ? blocks : 1, 256, 0, (cudaStream_t)a->queue>>>((float *)t[0].data, (const float *)t[1].data,
                                                                    (const float *)t[2].data, len);
  return (int)cudaGetLastError();
}

extern "C" __attribute__((visibility("default"))) int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version) {
  if (abi_version != ND_KERNEL_ABI_VERSION) return ND_PLUGIN_EABI;
  const nd_kernel_def defs[] = {
      {"residual_fwd", "cuda_add", ND_BACKEND_CPU, add_cpu, NULL, NULL},
      {"residual_fwd", "cuda_add", ND_BACKEND_CUDA, add_cuda, NULL, NULL},
  };
  for (int i = 0; i < 2; i++)
    if (reg->add_kernel(reg, &defs[i])) return -1;
  return 0;
}
