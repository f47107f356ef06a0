/* kernel-check of a plugin's OpenCL implementation: its kernel on device
 * copies of the checker's host tensors, in a context of its own (no StarPU:
 * kernel-check starts no workers), then the copies read back. */
#include "kernels/opencl/opencl.h"

#include <stdint.h>
#include <string.h>

#include "graph/kinds.h"
#include "ndgraph/kernel.h"

static size_t bytes_of(const nd_tensor_desc *d) {
  int64_t e = 1;
  for (int i = 0; i < d->ndim; i++) e += (d->shape[i] - 1) * d->strides[i];
  return (size_t)e * (d->dtype == ND_KERNEL_F64 ? 8 : 4);
}

int nd_ocl_check_call(nd_kernel_fn fn, nd_tensor_desc *d, int n, nd_kernel_args *a, nd_error *err) {
  cl_platform_id platform;
  cl_device_id device;
  cl_uint np = 0, nd = 0;
  cl_int rc = clGetPlatformIDs(1, &platform, &np);
  if (rc == CL_SUCCESS && np > 0) rc = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &nd);
  if (rc != CL_SUCCESS || np == 0 || nd == 0)
    return nd__fail(err, ND_ENODEV, "kernel check: no OpenCL device (is an OpenCL platform such as PoCL installed?)");
  cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &rc);
  if (rc != CL_SUCCESS) return nd__fail(err, ND_ENODEV, "kernel check: OpenCL context: error %d", rc);
  cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &rc);
  nd_tensor_desc dev[ND_KIND_MAX_BUFFERS];
  int made = 0, ret = 0;
  if (rc != CL_SUCCESS) {
    ret = nd__fail(err, ND_ENODEV, "kernel check: OpenCL queue: error %d", rc);
    goto cleanup;
  }
  if (n > ND_KIND_MAX_BUFFERS) {
    ret = nd__fail(err, ND_EINVAL, "kernel check: %d tensors, at most %d", n, ND_KIND_MAX_BUFFERS);
    goto cleanup;
  }
  for (; made < n; made++) {
    dev[made] = d[made];
    if (!d[made].data) continue;
    dev[made].data =
        clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes_of(&d[made]), d[made].data, &rc);
    if (rc != CL_SUCCESS) {
      ret = nd__fail(err, ND_ENOMEM, "kernel check: OpenCL buffer: error %d", rc);
      goto cleanup;
    }
  }
  a->queue = q;
  a->device = 0;
  ret = fn(dev, n, a);
  clFinish(q);
  for (int i = 0; i < n && !ret; i++)
    if (d[i].data) clEnqueueReadBuffer(q, dev[i].data, CL_TRUE, 0, bytes_of(&d[i]), d[i].data, 0, NULL, NULL);
cleanup:
  for (int i = 0; i < made; i++)
    if (d[i].data && dev[i].data) clReleaseMemObject(dev[i].data);
  if (q) clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return ret;
}
