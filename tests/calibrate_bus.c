/* Starts and stops StarPU once, before the tests, in the test suite's
 * STARPU_HOME: the first start measures the bus and writes its model there.
 * The tests then run two at a time and only read that model; two processes
 * writing it at once, or one reading it while another writes, make StarPU
 * abort. */
#include <starpu.h>
#include <stdio.h>

#include "tasks/exec.h"

int main(void) {
  nd_runtime_starpu_env();
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = 1;
  conf.ncuda = 0;
  conf.nopencl = 0;
  /* a StarPU that does not start is every StarPU test's to report */
  if (starpu_init(&conf)) {
    fprintf(stderr, "tests/calibrate_bus: StarPU did not start; its tests will say why\n");
    return 0;
  }
  starpu_shutdown();
  return 0;
}
