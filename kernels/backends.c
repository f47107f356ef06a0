/* The backends compiled into this ndgraph: the one place that knows which. */
#include "kernels/backend.h"

#include <starpu.h>

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

int nd__worker_backend(int worker) {
  switch (starpu_worker_get_type(worker)) {
  case STARPU_OPENCL_WORKER:
    return ND_BACKEND_OPENCL;
  case STARPU_CUDA_WORKER:
    return ND_BACKEND_CUDA;
  default:
    return ND_BACKEND_CPU;
  }
}

int nd__cuda_devices_present(void) {
#ifdef ND_HAVE_CUDA
  return nd_cuda_device_count();
#else
  return -1;
#endif
}
