/* What this build of ndgraph has (`ndgraph --version`): the StarPU it runs
 * on and what that StarPU and ndgraph's backends were built with. */
#include <starpu.h>
#include <stdio.h>

#include "ndconfig.h"
#include "ndgraph/ndgraph.h"
#include "tasks/exec.h"

void nd_build_describe(nd_build_info *out) {
  int major = 0, minor = 0, release = 0;
  starpu_get_version(&major, &minor, &release);
  snprintf(out->starpu_version, sizeof out->starpu_version, "%d.%d.%d", major, minor, release);
  for (int b = 0; b < ND_BACKEND_COUNT; b++) out->backends[b] = nd_runtime_has_backend(b);
#ifdef ND_STARPU_HAS_MPI
  out->mpi = 1;
#else
  out->mpi = 0;
#endif
  out->max_cpus = STARPU_MAXCPUS;
}
