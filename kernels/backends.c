/* The backends compiled into this ndgraph: the one place that knows which. */
#include "kernels/backend.h"

#include <starpu.h>

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

void nd__backends_configure(struct starpu_conf *conf, const int want[ND_BACKEND_COUNT], long spare_cores) {
  conf->ncuda = conf->nopencl = 0;
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (ops && ops->configure && want[b] > 0) ops->configure(conf, want[b], spare_cores);
  }
}

int nd__worker_backend(int worker) {
  int type = (int)starpu_worker_get_type(worker);
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (ops && ops->worker_type == type) return b;
  }
  return ND_BACKEND_CPU;
}
