/* Which of OpenBLAS's kernel sets the CPU GEMMs run on.
 *
 * OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its kernels from
 * the CPU's model number when it is loaded. A model newer than the library
 * gets its generic SSE3 kernels ("Prescott"): Debian 12's 0.3.21 on a Xeon
 * of family 6 model 207 measured 20 GFLOP/s for a 512^3 sgemm on one core,
 * 105 with OPENBLAS_CORETYPE=SkylakeX, and a training step of the
 * mixed-node benchmark's model on one CPU worker 5.6 s against 1.48 s
 * (2026-12-02, README *Dependencies*). The choice is made once, before
 * main(), so a better one needs a new process image: nd_blas_select_kernels. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "kernels/blas.h"
#include "ndgraph/ndgraph.h"

/* the kernel sets of OpenBLAS 0.3.21 that use AVX2 and FMA or better */
static int uses_avx2(const char *core) {
  static const char *const fast[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"};
  for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++)
    if (strcmp(core, fast[i]) == 0) return 1;
  return 0;
}

/* The best kernel set this CPU runs (the compiler's CPUID check includes the
 * operating system's support for the wider registers), NULL below AVX2. */
static const char *best_core(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return NULL;
}

const char *nd_blas_core(void) { return openblas_get_corename(); }

void nd__blas_one_thread(void) { openblas_set_num_threads(1); }

const char *nd__blas_better_core(void) {
  /* the user's choice, or this process already is the re-executed one */
  if (getenv("OPENBLAS_CORETYPE")) return NULL;
  const char *core = nd_blas_core();
  const char *best = best_core();
  return core && best && !uses_avx2(core) ? best : NULL;
}

void nd_blas_select_kernels(char **argv) {
  /* started as `ld.so PROGRAM ...`, /proc/self/exe is the loader, which would
   * take argv[1] for the program: no interpreter was loaded then (AT_BASE 0) */
  if (getauxval(AT_BASE) == 0) return;
  const char *best = nd__blas_better_core(), *threads = getenv("OPENBLAS_NUM_THREADS");
  /* ndgraph runs OpenBLAS on one thread per worker (tasks/runtime.c). With
   * more, OpenBLAS starts its pool when it is loaded, before main() can block
   * any signal: a SIGTERM or SIGUSR1 that the kernel handed to that thread
   * while the runtime starts met the default action or another library's
   * handler, and killed the run (cli/signals.c) */
  int one_thread = threads && strcmp(threads, "1") == 0;
  if (!best && one_thread) return;
  /* the program's file by the path /proc/self/exe names, not through that
   * link: under valgrind the link is valgrind's own tool, which its loader
   * cannot run, while readlink gives the program it runs */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0 || n >= (ssize_t)sizeof self - 1) return; /* no /proc: go on as loaded */
  self[n] = '\0';
  if ((best && setenv("OPENBLAS_CORETYPE", best, 1) != 0) ||
      (!one_thread && setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0))
    return;
  execv(self, argv);
  /* the file is gone or replaced: go on as loaded */
  if (best) unsetenv("OPENBLAS_CORETYPE");
}
