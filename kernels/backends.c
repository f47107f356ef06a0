/* The backends compiled into this ndgraph: the one place that knows which. */
#include "kernels/backend.h"
#include "kernels/cuda/cuda.h"
#include "ndconfig.h"

extern const nd_backend_ops nd__cpu_backend;
#ifdef ND_HAVE_OPENCL
extern const nd_backend_ops nd__opencl_backend;
#endif
#ifdef ND_HAVE_CUDA
extern const nd_backend_ops nd__cuda_backend;
#endif

const nd_backend_ops *nd__backend(int device) {
  switch (device) {
  case ND_BACKEND_CPU:
    return &nd__cpu_backend;
#ifdef ND_HAVE_OPENCL
  case ND_BACKEND_OPENCL:
    return &nd__opencl_backend;
#endif
#ifdef ND_HAVE_CUDA
  case ND_BACKEND_CUDA:
    return &nd__cuda_backend;
#endif
  default:
    return NULL;
  }
}

const char *nd__backend_name(int device) {
  /* backends not compiled in still have a name for messages */
  static const char *const names[ND_BACKEND_COUNT] = {"cpu", "cuda", "opencl"};
  const nd_backend_ops *ops = nd__backend(device);
  return ops ? ops->name : (unsigned)device < ND_BACKEND_COUNT ? names[device] : "?";
}

int nd__cuda_devices_present(void) {
#ifdef ND_HAVE_CUDA
  return nd_cuda_device_count();
#else
  return -1;
#endif
}
