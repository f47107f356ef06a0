/* Starting StarPU with the configuration's workers and policy, and the
 * backends' device contexts; counted, since StarPU is one per process. */
#include <pthread.h>
#include <sched.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/device.h"
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

/* The running StarPU: how many hold it, and the configuration it was
 * started with (the runtime section's keys that start StarPU). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int users;
static nd_config started;
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
  /* performance models benchmark from the start (a user's value is kept):
   * StarPU 1.3 otherwise switches a model to benchmarking when a dmda-type
   * policy first asks it about an uncalibrated size, and a worker then
   * running a task of that kind reads a start or end time it never took
   * ("measured >= 0" fails, the process aborts; driver_common.c reads the
   * flag three times per task) */
  setenv("STARPU_CALIBRATE", "1", 0);
}

/* The key asking for devices of kind b, "runtime.opencl_devices", in key. */
static const char *devices_key(int b, char *key, size_t size) {
  snprintf(key, size, "runtime.%s_devices", nd_device_name(b));
  return key;
}

/* How many devices of each kind to start (want[b]; -1 in the configuration:
 * all there are), checked against the backends built in and the devices
 * present before StarPU starts. */
static int devices_wanted(const nd_config *cfg, int want[ND_BACKEND_COUNT], nd_error *err) {
  char key[48];
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    const char *label = nd_device_label(b), *origin = nd__config_origin(cfg, devices_key(b, key, sizeof key));
    int n = b == ND_BACKEND_CPU ? 0 : (int)cfg->runtime.devices[b], found = ops && ops->present ? ops->present() : -1;
    if (n < 0) n = found > 0 ? found : 0; /* all */
    want[b] = n;
    if (n > 0 && !ops)
      return nd__fail(err, ND_ENODEV,
                      "%s: %s %d: no %s device: this ndgraph was built without %s (configure's summary says what it "
                      "lacked; `ndgraph --version` lists the backends built in)",
                      origin, key, n, label, label);
    if (n > 0 && found == 0) return nd__fail(err, ND_ENODEV, "%s: %s %d: no %s device found", origin, key, n, label);
    if (found >= 0 && n > found)
      return nd__fail(err, ND_ENODEV, "%s: %s %d: only %d %s device%s found", origin, key, n, found, label,
                      found == 1 ? "" : "s");
  }
  return 0;
}

/* Whether StarPU started the devices asked for; else err. */
static int devices_started(const nd_config *cfg, const int want[ND_BACKEND_COUNT], nd_error *err) {
  char key[48];
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    int found = nd_runtime_devices(b);
    if (b == ND_BACKEND_CPU || found >= want[b]) continue;
    const nd_backend_ops *ops = nd__backend(b);
    const char *label = nd_device_label(b);
    return nd__fail(err, ND_ENODEV, "%s: %s %d: only %d %s device%s found%s%s%s",
                    nd__config_origin(cfg, devices_key(b, key, sizeof key)), key, want[b], found, label,
                    found == 1 ? "" : "s", ops->missing_hint ? " (" : "", ops->missing_hint ? ops->missing_hint : "",
                    ops->missing_hint ? ")" : "");
  }
  return 0;
}

/* Each backend with workers sets its devices up: programs, libraries, math mode. */
static int start_backends(const nd_config *cfg, const int want[ND_BACKEND_COUNT], nd_error *err) {
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (!ops || !ops->start || (b != ND_BACKEND_CPU && want[b] == 0)) continue;
    int rc = ops->start(err);
    if (rc) return rc;
    backend_started[b] = 1;
    if (ops->set_tf32 && (rc = ops->set_tf32(nd_config_precision(cfg) == ND_PRECISION_TF32, err))) return rc;
  }
  return 0;
}

static int start(const nd_config *cfg, nd_error *err) {
  const char *policy = cfg->runtime.scheduler;
  /* ndgraph's policies go by struct, StarPU's by name (configs/policies.h) */
  struct starpu_sched_policy *own = nd_sched_policy(policy);
  if (!own && !nd_policy_is_starpu(nd_policy_of(policy)))
    return nd__fail(err, ND_ENOTIMPL, "%s: runtime.scheduler '%s' is not a policy this build runs (docs/config.md)",
                    nd__config_origin(cfg, "runtime.scheduler"), policy);
  int want[ND_BACKEND_COUNT], rc = devices_wanted(cfg, want, err);
  if (rc) return rc;

  /* the cores this process may run on (taskset, cpusets), not the machine's */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t allowed;
  if (!sched_getaffinity(0, sizeof allowed, &allowed) && CPU_COUNT(&allowed) < cores) cores = CPU_COUNT(&allowed);
  if (cores < 1) cores = 1;
  /* processes sharing this machine (mpirun) share its cores, and each
   * StarPU-MPI keeps one for its own thread */
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int shared = nd_mpi_size() > 1 && local && atol(local) > 1;
  if (shared) cores = cores / atol(local) > 1 ? cores / atol(local) - 1 : 1;
  /* devices of a CPU type run on threads of their own, and a driver thread
   * of StarPU's drives each discrete device: the CPU workers get the cores
   * they leave, of all the cores or of the runtime.workers asked for */
  int sharing = 0, drivers = 0;
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (!ops || b == ND_BACKEND_CPU) continue;
    if (ops->shares_cores) sharing += want[b];
    if (ops->driver_takes_core) drivers += want[b];
  }
  int workers = (cfg->runtime.workers > 0 ? (int)cfg->runtime.workers : (int)cores - sharing) - drivers;
  if (workers < 1) workers = 1;
  if (workers > STARPU_MAXCPUS) {
    if (cfg->runtime.workers > 0)
      fprintf(stderr, "ndgraph: note: runtime.workers %d capped at %d, the most this StarPU build starts\n", workers,
              STARPU_MAXCPUS);
    workers = STARPU_MAXCPUS;
  }
  nd_runtime_starpu_env();
  /* idle workers stay awake through a step only where each has a core no
   * one else computes on: no CPU-type device, no more threads than cores,
   * no other process of this job on the machine */
  nd_idle_wait_policy(cfg->runtime.wait_policy, policy, !sharing && !shared && workers + drivers <= cores);

  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = workers;
  nd__backends_configure(&conf, want, cores - workers);
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
  if ((rc = nd_mpi_starpu_init(&conf)) != 0)
    return nd__fail(err, ND_ERUNTIME, "StarPU failed to start (starpu_init returned %d)", rc);
  rc = devices_started(cfg, want, err);
  /* each worker polls for work: more of them than cores take turns on them */
  if (!rc && cfg->runtime.workers > 0 && workers + sharing + drivers > sysconf(_SC_NPROCESSORS_ONLN))
    fprintf(stderr,
            "ndgraph: note: runtime.workers %d (with %d device driver%s) on %ld cores: the workers share cores and "
            "steps will be slower\n",
            workers, sharing + drivers, sharing + drivers == 1 ? "" : "s", sysconf(_SC_NPROCESSORS_ONLN));
  /* then, under mpirun, what each process runs on, before any task */
  if (!rc && !(rc = start_backends(cfg, want, err)) && nd_mpi_size() > 1) rc = nd_nodes_exchange(err);
  if (rc) {
    stop_backends();
    nd_mpi_starpu_shutdown();
  }
  return rc;
}

/* Whether cfg asks StarPU for what the running one was started with. */
static int same_start(const nd_config *cfg) {
  for (int b = 0; b < ND_BACKEND_COUNT; b++)
    if (cfg->runtime.devices[b] != started.runtime.devices[b]) return 0;
  return cfg->runtime.workers == started.runtime.workers && (nd_config_precision(cfg) == ND_PRECISION_TF32) == (nd_config_precision(&started) == ND_PRECISION_TF32) &&
         strcmp(cfg->runtime.scheduler, started.runtime.scheduler) == 0;
}

/* "workers 2, <kind>_devices 0 for each device kind, tf32 false, scheduler ndws" */
static void describe_start(const nd_config *cfg, char *out, size_t size) {
  int n = snprintf(out, size, "workers %lld", (long long)cfg->runtime.workers);
  for (int b = 0; b < ND_BACKEND_COUNT; b++)
    if (b != ND_BACKEND_CPU && n >= 0 && (size_t)n < size)
      n += snprintf(out + n, size - (size_t)n, ", %s_devices %lld", nd_device_name(b),
                    (long long)cfg->runtime.devices[b]);
  if (n >= 0 && (size_t)n < size)
    snprintf(out + n, size - (size_t)n, ", tf32 %s, scheduler %s",
             nd_config_precision(cfg) == ND_PRECISION_TF32 ? "true" : "false",
             cfg->runtime.scheduler);
}

int nd_runtime_start(const nd_config *cfg, nd_error *err) {
  pthread_mutex_lock(&lock);
  int rc = 0;
  if (users == 0) {
    if (!(rc = start(cfg, err))) started = *cfg;
  } else if (!same_start(cfg)) {
    char was[256], asks[256];
    describe_start(&started, was, sizeof was);
    describe_start(cfg, asks, sizeof asks);
    rc = nd__fail(err, ND_ECONFIG,
                  "%s: runtime: StarPU already runs in this process with %s (another open trainer); this one asks %s",
                  nd__config_origin(cfg, NULL), was, asks);
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

int nd_runtime_devices(int kind) {
  const nd_backend_ops *ops = nd__backend(kind);
  return ops ? (int)starpu_worker_get_count_by_type((enum starpu_worker_archtype)ops->worker_type) : 0;
}

int nd_runtime_device_name(int kind, int i, char *out, size_t size) {
  const nd_backend_ops *ops = nd__backend(kind);
  if (!ops || !ops->describe || kind == ND_BACKEND_CPU || i < 0 || i >= nd_runtime_devices(kind)) return -1;
  int dev = starpu_worker_get_devid(starpu_worker_get_by_type((enum starpu_worker_archtype)ops->worker_type, i));
  int n = snprintf(out, size, "%s%d: ", nd_device_name(kind), dev);
  if (n < 0 || (size_t)n >= size) return 0;
  if (ops->describe(dev, out + n, size - (size_t)n)) snprintf(out + n, size - (size_t)n, "unknown device");
  return 0;
}

int nd_runtime_has_backend(int kind) { return nd__backend(kind) != NULL; }

int nd_runtime_workers(void) { return (int)starpu_cpu_worker_get_count(); }
