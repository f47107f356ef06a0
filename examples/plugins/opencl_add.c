/* An example ndgraph kernel plugin with OpenCL implementations: the
 * residual add (out = a + b) as "ocl_add", and the SiLU activation as
 * "silu_ocl", each registered for the CPU and for OpenCL devices under the
 * same name, so that kernels.override (model.activation) selects both.
 * On OpenCL the descriptors' data are cl_mem buffers and a->queue the
 * calling worker's queue; the program is built once per OpenCL context.
 *
 *   kernels.plugins: [examples/plugins/libopencl_add.so]
 *   kernels.override: {residual_fwd: ocl_add}
 *   model.activation: silu_ocl
 *   runtime.opencl_devices: 1
 *
 * `ndgraph kernel-check libopencl_add.so ocl_add` checks both against
 * ndgraph's reference. Build: cc -shared -fPIC opencl_add.c -lOpenCL -lpthread. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include <ndgraph/kernel.h>

static int add_cpu(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = t[0].data;                     // (n)
  const float *x = t[1].data, *y = t[2].data; // (n), (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = x[i] + y[i];
  return 0;
}

static int silu_cpu(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = t[0].data;     // (n)
  const float *x = t[1].data; // (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = x[i] / (1.0f + expf(-x[i]));
  return 0;
}

static int silu_bwd_cpu(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *dx = t[0].data;                       // (n)
  const float *x = t[1].data, *dy = t[2].data; // (n), (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) {
    float s = 1.0f / (1.0f + expf(-x[i]));
    dx[i] = s * (1.0f + x[i] * (1.0f - s)) * dy[i];
  }
  return 0;
}

static const char *source =
    "__kernel void ocl_add(__global float *out, __global const float *a, __global const float *b) {\n"
    "  size_t i = get_global_id(0);\n"
    "  out[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void silu_fwd(__global float *out, __global const float *x) {\n"
    "  size_t i = get_global_id(0);\n"
    "  out[i] = x[i] / (1.0f + exp(-x[i]));\n"
    "}\n"
    "__kernel void silu_bwd(__global float *dx, __global const float *x, __global const float *dy) {\n"
    "  size_t i = get_global_id(0);\n"
    "  float s = 1.0f / (1.0f + exp(-x[i]));\n"
    "  dx[i] = s * (1.0f + x[i] * (1.0f - s)) * dy[i];\n"
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
    if (*rc == CL_SUCCESS)
      programs[n_programs].ctx = ctx, programs[n_programs++].prog = p;
    else if (p)
      clReleaseProgram(p), p = NULL;
  } else if (!p) {
    *rc = CL_OUT_OF_RESOURCES;
  }
  pthread_mutex_unlock(&lock);
  return p;
}

/* The programs hold their contexts: released when ndgraph unloads the plugin. */
__attribute__((destructor)) static void release_programs(void) {
  for (int i = 0; i < n_programs; i++) clReleaseProgram(programs[i].prog);
  n_programs = 0;
}

/* Runs kernel `name` over t[0]'s elements with the n descriptors' buffers as arguments. */
static int launch(const char *name, const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  cl_command_queue q = a->queue;
  cl_context ctx;
  cl_device_id dev;
  cl_int rc = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
  if (rc == CL_SUCCESS) rc = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
  cl_program p = rc == CL_SUCCESS ? program_for(ctx, dev, &rc) : NULL;
  if (!p) return rc ? rc : -1;
  /* a kernel object per call: workers of several devices may call at once */
  cl_kernel k = clCreateKernel(p, name, &rc);
  if (rc != CL_SUCCESS) return rc;
  size_t global = (size_t)t[0].shape[0];
  for (int i = 0; i < n && rc == CL_SUCCESS; i++) {
    cl_mem buf = t[i].data;
    rc = clSetKernelArg(k, (cl_uint)i, sizeof buf, &buf);
  }
  if (rc == CL_SUCCESS && global > 0) rc = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  if (rc == CL_SUCCESS) rc = clFinish(q);
  clReleaseKernel(k);
  return rc;
}

static int add_opencl(const nd_tensor_desc *t, int n, const nd_kernel_args *a) { return launch("ocl_add", t, n, a); }
static int silu_opencl(const nd_tensor_desc *t, int n, const nd_kernel_args *a) { return launch("silu_fwd", t, n, a); }
static int silu_bwd_opencl(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  return launch("silu_bwd", t, n, a);
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
  nd_activation_def cpu = {"silu_ocl", silu_cpu, silu_bwd_cpu, NULL, NULL, NULL};
  nd_activation_def ocl = {"silu_ocl", silu_opencl, silu_bwd_opencl, NULL, NULL, NULL};
  if (reg->add_activation_for(reg, &cpu, ND_BACKEND_CPU)) return -1;
  return reg->add_activation_for(reg, &ocl, ND_BACKEND_OPENCL);
}
