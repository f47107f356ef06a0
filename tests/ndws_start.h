/* For tests that drive ndws on StarPU directly, with tiny codelets rather
 * than a trainer: StarPU with `workers` CPU workers, no device, ndws as the
 * policy, workers unbound (tests share the machine). starpu_init's code. */
#ifndef ND_TESTS_NDWS_START_H
#define ND_TESTS_NDWS_START_H

#include <starpu.h>
#include <stdlib.h>

#include "scheduler/policies.h"
#include "tasks/exec.h"

static inline int nd_test_start_ndws(int workers) {
  nd_runtime_starpu_env();
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = workers;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.sched_policy = &nd_ndws_policy;
  return starpu_init(&conf);
}

#endif
