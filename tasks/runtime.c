/* Starting StarPU with the configuration's workers and policy, and the
 * backends' device contexts; counted, since StarPU is one per process. */
#include <pthread.h>
#include <sched.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "configs/policies.h"
#include "kernels/backend.h"
#include "kernels/blas.h"
#include "scheduler/idle.h"
#include "scheduler/policies.h"
#include "tasks/collective.h"
#include "tasks/exec.h"
#include "tasks/mpi.h"
#include "tasks/nodes.h"

/* The running StarPU: how many hold it, and what it was started with. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int users;
static int64_t started_workers, started_opencl, started_cuda;
static int started_tf32;
static char started_policy[ND_NAME_MAX];
static int backend_started[ND_BACKEND_COUNT];

static void stop_backends(void) {
  for (int b = 0; b < ND_BACKEND_COUNT; b++)
    if (backend_started[b]) {
      nd__backend(b)->stop();
      backend_started[b] = 0;
    }
}

void nd_runtime_starpu_env(void) {
  /* the configuration decides the policy; quiet unless the user asked otherwise */
  unsetenv("STARPU_SCHED");
  setenv("STARPU_SILENT", "1", 0);
  /* PoCL and other CPU-type devices count: StarPU skips them otherwise. Every
   * process lists them, with OpenCL workers or without: StarPU keeps one bus
   * model per machine and rewrites it when a process counts other devices
   * than the model's, under any process reading it at that moment. */
  setenv("STARPU_OPENCL_ON_CPUS", "1", 1);
}

static int start(const nd_config *cfg, nd_error *err) {
  const char *policy = cfg->runtime.scheduler;
  /* ndgraph's policies go by struct, StarPU's by name (configs/policies.h) */
  struct starpu_sched_policy *own = nd_sched_policy(policy);
  if (!own && !nd_policy_is_starpu(nd_policy_of(policy)))
    return nd__fail(err, ND_ENOTIMPL, "%s: runtime.scheduler '%s' is not a policy this build runs (docs/config.md)",
                    nd__config_origin(cfg, "runtime.scheduler"), policy);
  int opencl = (int)cfg->runtime.opencl_devices;
  const nd_backend_ops *ocl = nd__backend(ND_BACKEND_OPENCL);
  if (opencl > 0 && !ocl)
    return nd__fail(err, ND_ENODEV,
                    "%s: runtime.opencl_devices %d: this ndgraph was built without OpenCL (configure found no OpenCL "
                    "headers, ICD loader and CLBlast, or was given --without-opencl)",
                    nd__config_origin(cfg, "runtime.opencl_devices"), opencl);

  int cuda = (int)cfg->runtime.cuda_devices, cuda_found = nd__cuda_devices_present();
  if (cuda < 0) cuda = cuda_found > 0 ? cuda_found : 0; /* all */
  if (cuda > 0 && cuda_found < 0)
    return nd__fail(err, ND_ENODEV, "%s: runtime.cuda_devices %d: no CUDA device: this ndgraph was built without CUDA",
                    nd__config_origin(cfg, "runtime.cuda_devices"), cuda);
  if (cuda > cuda_found && cuda_found == 0)
    return nd__fail(err, ND_ENODEV, "%s: runtime.cuda_devices %d: no CUDA device found",
                    nd__config_origin(cfg, "runtime.cuda_devices"), cuda);
  if (cuda > 0 && cuda > cuda_found)
    return nd__fail(err, ND_ENODEV, "%s: runtime.cuda_devices %d: only %d CUDA device%s found",
                    nd__config_origin(cfg, "runtime.cuda_devices"), cuda, cuda_found, cuda_found == 1 ? "" : "s");

  /* the cores this process may run on (taskset, cpusets), not the machine's */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t allowed;
  if (!sched_getaffinity(0, sizeof allowed, &allowed) && CPU_COUNT(&allowed) < cores) cores = CPU_COUNT(&allowed);
  if (cores < 1) cores = 1;
  /* the OpenCL devices' driver threads take cores too, and each CUDA device
   * has a CPU thread of StarPU's driving it: the CPU workers get the cores
   * they leave, of all the cores or of the runtime.workers asked for */
  /* processes sharing this machine (mpirun) share its cores, and each
   * StarPU-MPI keeps one for its own thread */
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int shared = nd_mpi_size() > 1 && local && atol(local) > 1;
  if (shared) cores = cores / atol(local) > 1 ? cores / atol(local) - 1 : 1;
  int workers = (cfg->runtime.workers > 0 ? (int)cfg->runtime.workers : (int)cores - opencl) - cuda;
  if (workers < 1) workers = 1;
  if (workers > STARPU_MAXCPUS) {
    if (cfg->runtime.workers > 0)
      fprintf(stderr, "ndgraph: note: runtime.workers %d capped at %d, the most this StarPU build starts\n", workers,
              STARPU_MAXCPUS);
    workers = STARPU_MAXCPUS;
  }
  nd_runtime_starpu_env();
  /* idle workers stay awake through a step only where each has a core no
   * one else computes on: no CPU-type OpenCL device, no more threads than
   * cores, no other process of this job on the machine */
  nd_idle_wait_policy(cfg->runtime.wait_policy, policy, !opencl && !shared && workers + cuda <= cores);

  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = workers;
  conf.ncuda = cuda;
  conf.nopencl = opencl;
  if (opencl > 0) {
    /* a CPU-type device runs on threads of its own: give it the cores the
     * CPU workers leave (at least one each), unless the user chose */
    long spare = cores - workers;
    char threads[24];
    snprintf(threads, sizeof threads, "%ld", spare >= opencl ? spare / opencl : 1);
    setenv("POCL_MAX_PTHREAD_COUNT", threads, 0);
  }
  /* StarPU looks names up among its own policies only; ours go by struct */
  conf.sched_policy_name = own ? NULL : policy;
  conf.sched_policy = own;
  /* StarPU's SIGINT handler waits for every submitted task and would take
   * the signal from ours (cli/signals.c: finish the step, checkpoint, stop);
   * under `ndgraph calibrate` it spun forever */
  conf.catch_signals = 0;
  /* one BLAS thread per StarPU worker: the workers are the parallelism */
  nd__blas_one_thread();
  static int blas_noted; /* once a process: a program that did not call nd_blas_select_kernels */
  const char *better = nd__blas_better_core();
  if (better && !blas_noted++)
    fprintf(stderr,
            "ndgraph: note: OpenBLAS runs its generic %s kernels on this CPU, which can run its %s ones, several times "
            "faster: set OPENBLAS_CORETYPE=%s, or call nd_blas_select_kernels(argv) first in main()\n",
            nd_blas_core(), better, better);
  int rc = nd_mpi_starpu_init(&conf);
  if (rc != 0) return nd__fail(err, ND_ERUNTIME, "StarPU failed to start (starpu_init returned %d)", rc);
  int found = nd_runtime_opencl_devices();
  if (found < opencl) {
    nd_mpi_starpu_shutdown();
    return nd__fail(err, ND_ENODEV,
                    "%s: runtime.opencl_devices %d: only %d OpenCL device%s found (is an OpenCL platform such as PoCL "
                    "installed? clinfo lists them)",
                    nd__config_origin(cfg, "runtime.opencl_devices"), opencl, found, found == 1 ? "" : "s");
  }
  if ((found = nd_runtime_cuda_devices()) < cuda) {
    starpu_shutdown();
    return nd__fail(err, ND_ENODEV, "%s: runtime.cuda_devices %d: StarPU started only %d CUDA device%s",
                    nd__config_origin(cfg, "runtime.cuda_devices"), cuda, found, found == 1 ? "" : "s");
  }
  /* each worker polls for work: more of them than cores take turns on them */
  if (cfg->runtime.workers > 0 && workers + opencl + cuda > sysconf(_SC_NPROCESSORS_ONLN))
    fprintf(stderr,
            "ndgraph: note: runtime.workers %d (with %d device driver%s) on %ld cores: the workers share cores and "
            "steps will be slower\n",
            workers, opencl + cuda, opencl + cuda == 1 ? "" : "s", sysconf(_SC_NPROCESSORS_ONLN));
  /* each backend with workers sets its devices up: programs, libraries */
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (!ops || !ops->start || (b == ND_BACKEND_OPENCL && opencl == 0) || (b == ND_BACKEND_CUDA && cuda == 0)) continue;
    if ((rc = ops->start(err))) {
      stop_backends();
      nd_mpi_starpu_shutdown();
      return rc;
    }
    backend_started[b] = 1;
    if (ops->set_tf32 && (rc = ops->set_tf32(cfg->runtime.tf32, err))) {
      stop_backends();
      nd_mpi_starpu_shutdown();
      return rc;
    }
  }
  /* under mpirun, what each process runs on, before any task */
  if (nd_mpi_size() > 1 && (rc = nd_nodes_exchange(err))) {
    stop_backends();
    nd_mpi_starpu_shutdown();
    return rc;
  }
  return 0;
}

int nd_runtime_start(const nd_config *cfg, nd_error *err) {
  pthread_mutex_lock(&lock);
  int rc = 0;
  if (users == 0) {
    if (!(rc = start(cfg, err))) {
      started_workers = cfg->runtime.workers;
      started_opencl = cfg->runtime.opencl_devices;
      started_cuda = cfg->runtime.cuda_devices;
      started_tf32 = cfg->runtime.tf32;
      snprintf(started_policy, sizeof started_policy, "%s", cfg->runtime.scheduler);
    }
  } else if (cfg->runtime.workers != started_workers || cfg->runtime.opencl_devices != started_opencl ||
             cfg->runtime.cuda_devices != started_cuda || cfg->runtime.tf32 != started_tf32 ||
             strcmp(cfg->runtime.scheduler, started_policy) != 0) {
    rc = nd__fail(
        err, ND_ECONFIG,
        "%s: runtime: StarPU already runs in this process with workers %lld, opencl_devices %lld, cuda_devices "
        "%lld, tf32 %s, scheduler %s (another open trainer); this one asks workers %lld, opencl_devices %lld, "
        "cuda_devices %lld, tf32 %s, scheduler %s",
        nd__config_origin(cfg, NULL), (long long)started_workers, (long long)started_opencl, (long long)started_cuda,
        started_tf32 ? "true" : "false", started_policy, (long long)cfg->runtime.workers,
        (long long)cfg->runtime.opencl_devices, (long long)cfg->runtime.cuda_devices,
        cfg->runtime.tf32 ? "true" : "false", cfg->runtime.scheduler);
  }
  if (!rc) users++;
  pthread_mutex_unlock(&lock);
  return rc;
}

void nd_runtime_stop(void) {
  pthread_mutex_lock(&lock);
  if (users > 0 && --users == 0) {
    nd__coll_stop();
    stop_backends();
    nd_mpi_starpu_shutdown();
  }
  pthread_mutex_unlock(&lock);
}

int nd_runtime_opencl_devices(void) { return (int)starpu_worker_get_count_by_type(STARPU_OPENCL_WORKER); }

int nd_runtime_cuda_devices(void) { return (int)starpu_worker_get_count_by_type(STARPU_CUDA_WORKER); }

int nd_runtime_cuda_device(int i, char *out, size_t size) {
  const nd_backend_ops *cuda = nd__backend(ND_BACKEND_CUDA);
  int w = i >= 0 && i < nd_runtime_cuda_devices() ? starpu_worker_get_by_type(STARPU_CUDA_WORKER, i) : -1;
  if (!cuda || w < 0) return -1;
  int dev = starpu_worker_get_devid(w), n = snprintf(out, size, "cuda%d: ", dev);
  if (n < 0 || (size_t)n >= size) return 0;
  if (cuda->describe(dev, out + n, size - (size_t)n)) snprintf(out + n, size - (size_t)n, "unknown device");
  return 0;
}

int nd_runtime_has_cuda(void) { return nd__backend(ND_BACKEND_CUDA) != NULL; }

int nd_runtime_has_opencl(void) { return nd__backend(ND_BACKEND_OPENCL) != NULL; }

int nd_runtime_workers(void) { return (int)starpu_cpu_worker_get_count(); }
