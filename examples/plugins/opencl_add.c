/* An example ndgraph kernel plugin with an OpenCL implementation: the
 * residual add (out = a + b) as "ocl_add", registered for the CPU and for
 * OpenCL devices under the same name, so that kernels.override selects both.
 * On OpenCL the descriptors' data are cl_mem buffers and a->queue the
 * calling worker's queue; the program is built once per OpenCL context.
 *
 *   kernels.plugins: [examples/plugins/libopencl_add.so]
 *   kernels.override: {residual_fwd: ocl_add}
 *   runtime.opencl_devices: 1
 *
 * `ndgraph kernel-check libopencl_add.so ocl_add` checks both against
 * ndgraph's reference. Build: cc -shared -fPIC opencl_add.c -lOpenCL -lpthread. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdint.h>

#include <ndgraph/kernel.h>

static int add_cpu(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = t[0].data;                          // (n)
  const float *x = t[1].data, *y = t[2].data;      // (n), (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = x[i] + y[i];
  return 0;
}

static const char *source =
    "__kernel void ocl_add(__global float *out, __global const float *a, __global const float *b) {\n"
    "  size_t i = get_global_id(0);\n"
    "  out[i] = a[i] + b[i];\n"
    "}\n";

/* One program per context: ndgraph's devices each have theirs, kernel-check its own. */
#define MAX_CONTEXTS 16
static struct {
  cl_context ctx;
  cl_program prog;
} programs[MAX_CONTEXTS];
static int n_programs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static cl_program program_for(cl_context ctx, cl_device_id dev, cl_int *rc) {
  cl_program p = NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_programs && !p; i++)
    if (programs[i].ctx == ctx) p = programs[i].prog;
  if (!p && n_programs < MAX_CONTEXTS) {
    p = clCreateProgramWithSource(ctx, 1, &source, NULL, rc);
    if (*rc == CL_SUCCESS) *rc = clBuildProgram(p, 1, &dev, "", NULL, NULL);
    if (*rc == CL_SUCCESS) programs[n_programs].ctx = ctx, programs[n_programs++].prog = p;
    else if (p) clReleaseProgram(p), p = NULL;
  } else if (!p) {
    *rc = CL_OUT_OF_RESOURCES;
  }
  pthread_mutex_unlock(&lock);
  return p;
}

static int add_opencl(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  cl_command_queue q = a->queue;
  cl_context ctx;
  cl_device_id dev;
  cl_int rc = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
  if (rc == CL_SUCCESS) rc = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
  cl_program p = rc == CL_SUCCESS ? program_for(ctx, dev, &rc) : NULL;
  if (!p) return rc ? rc : -1;
  /* a kernel object per call: workers of several devices may call at once */
  cl_kernel k = clCreateKernel(p, "ocl_add", &rc);
  if (rc != CL_SUCCESS) return rc;
  cl_mem out = t[0].data, x = t[1].data, y = t[2].data;
  size_t global = (size_t)t[0].shape[0];
  rc = clSetKernelArg(k, 0, sizeof out, &out);
  if (rc == CL_SUCCESS) rc = clSetKernelArg(k, 1, sizeof x, &x);
  if (rc == CL_SUCCESS) rc = clSetKernelArg(k, 2, sizeof y, &y);
  if (rc == CL_SUCCESS && global > 0) rc = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  if (rc == CL_SUCCESS) rc = clFinish(q);
  clReleaseKernel(k);
  return rc;
}

int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version);
int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version) {
  if (abi_version != ND_KERNEL_ABI_VERSION) return ND_PLUGIN_EABI;
  const nd_kernel_def defs[] = {
      {"residual_fwd", "ocl_add", ND_BACKEND_CPU, add_cpu, NULL, NULL},
      {"residual_fwd", "ocl_add", ND_BACKEND_OPENCL, add_opencl, NULL, NULL},
  };
  for (int i = 0; i < 2; i++)
    if (reg->add_kernel(reg, &defs[i])) return -1;
  return 0;
}
