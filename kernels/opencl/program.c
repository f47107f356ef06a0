/* The OpenCL program of kernels.cl on StarPU's devices, and kernel launches. */
#include "kernels/opencl/opencl.h"

#ifdef ND_HAVE_OPENCL
#include <clblast_c.h>
#include <starpu.h>
#include <stdio.h>

static const char source[] =
#include "kernels/opencl/source.inc"
    ;

static const char *const kernel_names[ND_OCL_KERNEL_COUNT] = {
#define ND__OCL_NAME(name) "nd_" #name,
    ND_OCL_KERNELS(ND__OCL_NAME)
#undef ND__OCL_NAME
};

static struct starpu_opencl_program program;
static int loaded;
/* Kernel objects per device, created by that device's worker on first use:
 * one worker per device, so no two threads set arguments on one kernel. */
static cl_kernel kernels[STARPU_MAXOPENCLDEVS][ND_OCL_KERNEL_COUNT];

int nd_ocl_load(nd_error *err) {
  if (loaded) return 0;
  /* -cl-fast-relaxed-math would change exp/tanh results: keep IEEE behaviour */
  int rc = starpu_opencl_load_opencl_from_string(source, &program, "-cl-std=CL1.2");
  if (rc) return nd__fail(err, ND_ERUNTIME, "OpenCL: kernels/opencl/kernels.cl failed to build (error %d)", rc);
  loaded = 1;
  return 0;
}

void nd_ocl_unload(void) {
  if (!loaded) return;
  for (int d = 0; d < STARPU_MAXOPENCLDEVS; d++)
    for (int k = 0; k < ND_OCL_KERNEL_COUNT; k++)
      if (kernels[d][k]) {
        clReleaseKernel(kernels[d][k]);
        kernels[d][k] = NULL;
      }
  starpu_opencl_unload_opencl(&program);
  /* CLBlast caches programs per context: the next StarPU gets new contexts,
   * possibly at the same addresses */
  CLBlastClearCache();
  loaded = 0;
}

static int my_device(cl_command_queue *queue) {
  int devid = starpu_worker_get_devid(starpu_worker_get_id());
  starpu_opencl_get_queue(devid, queue);
  return devid;
}

int nd_ocl_run(enum nd_ocl_kernel k, int dims, const size_t *global, int nargs, const nd_ocl_arg *args) {
  cl_command_queue queue;
  int devid = my_device(&queue);
  if (devid < 0 || devid >= STARPU_MAXOPENCLDEVS || !loaded) return CL_INVALID_DEVICE;
  cl_kernel kern = kernels[devid][k];
  if (!kern) {
    cl_command_queue unused;
    int rc = starpu_opencl_load_kernel(&kern, &unused, &program, kernel_names[k], devid);
    if (rc != CL_SUCCESS) return rc ? rc : CL_INVALID_KERNEL;
    kernels[devid][k] = kern;
  }
  for (int i = 0; i < nargs; i++) {
    cl_int rc = clSetKernelArg(kern, (cl_uint)i, args[i].size, args[i].value);
    if (rc != CL_SUCCESS) return rc;
  }
  for (int i = 0; i < dims; i++)
    if (global[i] == 0) return 0; /* nothing to do: OpenCL refuses empty ranges */
  cl_int rc = clEnqueueNDRangeKernel(queue, kern, (cl_uint)dims, NULL, global, NULL, 0, NULL, NULL);
  if (rc != CL_SUCCESS) return rc;
  return clFinish(queue);
}

int nd_ocl_scale(cl_mem v, size_t n, float beta) {
  if (beta == 1.0f) return 0;
  nd_ocl_arg a[] = {ND_OCL_ARG(v), ND_OCL_ARG(beta)};
  return nd_ocl_run(ND_OCL_scale, 1, &n, 2, a);
}

int nd_ocl_copy(cl_mem dst, cl_mem src, size_t bytes) {
  cl_command_queue queue;
  my_device(&queue);
  cl_int rc = clEnqueueCopyBuffer(queue, src, dst, 0, 0, bytes, 0, NULL, NULL);
  return rc != CL_SUCCESS ? rc : clFinish(queue);
}

int nd_ocl_read(void *dst, cl_mem src, size_t bytes) {
  cl_command_queue queue;
  my_device(&queue);
  return clEnqueueReadBuffer(queue, src, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
}

cl_mem nd_ocl_alloc(size_t bytes, cl_int *rc) {
  cl_context ctx;
  starpu_opencl_get_context(starpu_worker_get_devid(starpu_worker_get_id()), &ctx);
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes ? bytes : sizeof(float), NULL, rc);
  return *rc == CL_SUCCESS ? m : NULL;
}

const char *nd_ocl_device_name(int devid) {
  static char name[STARPU_MAXOPENCLDEVS][128];
  if (devid < 0 || devid >= STARPU_MAXOPENCLDEVS) return "?";
  cl_device_id dev;
  starpu_opencl_get_device(devid, &dev);
  if (!name[devid][0] && clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name[devid] - 1, name[devid], NULL) != CL_SUCCESS)
    snprintf(name[devid], sizeof name[devid], "opencl%d", devid);
  return name[devid];
}
#endif
