/* kernel-check of a plugin's CUDA implementation: its kernel on device
 * copies of the checker's host tensors, on a stream of its own on device 0
 * (no StarPU: kernel-check starts no workers), then the copies read back. */
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "common/error.h"
#include "graph/kinds.h"
#include "kernels/cuda/cuda.h"
#include "ndgraph/kernel.h"

static size_t bytes_of(const nd_tensor_desc *d) {
  int64_t e = 1;
  for (int i = 0; i < d->ndim; i++) e += (d->shape[i] - 1) * d->strides[i];
  return (size_t)e * (d->dtype == ND_KERNEL_F64 ? 8 : 4);
}

int nd_cuda_check_call(nd_kernel_fn fn, nd_tensor_desc *d, int n, nd_kernel_args *a, nd_error *err) {
  if (nd_cuda_device_count() == 0) return nd__fail(err, ND_ENODEV, "kernel check: no CUDA device");
  if (n > ND_KIND_MAX_BUFFERS)
    return nd__fail(err, ND_EINVAL, "kernel check: %d tensors, at most %d", n, ND_KIND_MAX_BUFFERS);
  nd_tensor_desc dev[ND_KIND_MAX_BUFFERS];
  cudaStream_t s = NULL;
  int made = 0, ret = 0;
  cudaError_t e = cudaSetDevice(0);
  if (!e) e = cudaStreamCreate(&s);
  if (e) {
    ret = nd__fail(err, ND_ENODEV, "kernel check: CUDA device 0: %s", cudaGetErrorString(e));
    goto cleanup;
  }
  for (; made < n; made++) {
    dev[made] = d[made];
    if (!d[made].data) continue;
    dev[made].data = NULL;
    e = cudaMalloc(&dev[made].data, bytes_of(&d[made]));
    if (!e) e = cudaMemcpy(dev[made].data, d[made].data, bytes_of(&d[made]), cudaMemcpyHostToDevice);
    if (e) {
      made++;
      ret = nd__fail(err, ND_ENOMEM, "kernel check: CUDA buffer: %s", cudaGetErrorString(e));
      goto cleanup;
    }
  }
  a->queue = s;
  a->device = 0;
  ret = fn(dev, n, a);
  /* a kernel may return before its work on the stream ends */
  e = cudaStreamSynchronize(s);
  if (!ret && e) ret = (int)e;
  for (int i = 0; i < n && !ret; i++)
    if (d[i].data) cudaMemcpy(d[i].data, dev[i].data, bytes_of(&d[i]), cudaMemcpyDeviceToHost);
cleanup:
  for (int i = 0; i < made; i++)
    if (d[i].data && dev[i].data) cudaFree(dev[i].data);
  if (s) cudaStreamDestroy(s);
  return ret;
}
