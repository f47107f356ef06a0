/* The CPU all-reduce task, run through StarPU on CPU workers with 2, 3 and 4
 * parts in float32 and float64: afterwards every part must hold, bit for
 * bit, the sum in rank order ((p0 + p1) + p2) + p3. The values span many
 * magnitudes, so a sum in another order, or of fewer parts, gives other
 * bits; the training tests only see layouts with 2 participants, where
 * reverse order is the same sum. */
#include <math.h>
#include <starpu.h>
#include <stdint.h>
#include <string.h>

#include "tasks/codelets.h"
#include "tests/tap.h"

#define N 4096
#define MAX_PARTS 4

static uint64_t rng = 0x2545f4914f6cdd1du;

/* A value in +-[2^-20, 2^20], so that rounding depends on the order of the sum. */
static double next_value(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  double mant = 1.0 + (double)(rng >> 11) * 0x1.0p-53;
  int e = (int)(rng % 41) - 20;
  return (rng >> 3 & 1 ? -1 : 1) * ldexp(mant, e);
}

/* Runs the all-reduce task on nparts parts of type dtype; returns how many
 * parts differ in any bit from the rank-order sum, or -1 if it did not run. */
static int check(int nparts, enum nd_dtype dtype) {
  size_t es = dtype == ND_F64 ? sizeof(double) : sizeof(float);
  static double in[MAX_PARTS][N];
  void *part[MAX_PARTS];
  starpu_data_handle_t h[MAX_PARTS];
  enum starpu_data_access_mode modes[MAX_PARTS];
  for (int p = 0; p < nparts; p++) {
    part[p] = malloc(N * es);
    for (int i = 0; i < N; i++) {
      in[p][i] = next_value();
      if (dtype == ND_F64) ((double *)part[p])[i] = in[p][i];
      else ((float *)part[p])[i] = (float)in[p][i];
    }
    starpu_vector_data_register(&h[p], STARPU_MAIN_RAM, (uintptr_t)part[p], N, es);
    modes[p] = STARPU_RW;
  }
  nd_task irt = {.kind = ND_TASK_ALLREDUCE};
  irt.a.coll = (struct nd_coll_args){.n = N, .nparts = nparts, .dtype = dtype};
  nd__task_ctx ctx = {.task = &irt};
  struct starpu_task *t = starpu_task_create();
  t->cl = nd__codelet(ND_TASK_ALLREDUCE);
  t->cl_arg = &ctx;
  t->nbuffers = nparts;
  /* StarPU frees these two with the task */
  t->dyn_handles = malloc(sizeof h);
  t->dyn_modes = malloc(sizeof modes);
  memcpy(t->dyn_handles, h, sizeof h);
  memcpy(t->dyn_modes, modes, sizeof modes);
  t->detach = 0; /* waited for, then destroyed by starpu_task_wait */
  int rc = starpu_task_submit(t);
  if (rc == 0) rc = starpu_task_wait(t);
  int bad = 0;
  for (int p = 0; p < nparts; p++) {
    starpu_data_unregister(h[p]);
    int differs = 0;
    for (int i = 0; i < N; i++) {
      if (dtype == ND_F64) {
        double s = in[0][i];
        for (int q = 1; q < nparts; q++) s += in[q][i];
        differs |= memcmp(&s, (double *)part[p] + i, sizeof s) != 0;
      } else {
        float s = (float)in[0][i];
        for (int q = 1; q < nparts; q++) s += (float)in[q][i];
        differs |= memcmp(&s, (float *)part[p] + i, sizeof s) != 0;
      }
    }
    bad += differs;
    free(part[p]);
  }
  return rc ? -1 : bad;
}

int main(void) {
  setenv("STARPU_SILENT", "1", 0);
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = 2;
  conf.ncuda = 0;
  conf.nopencl = 0;
  if (starpu_init(&conf)) {
    skip("StarPU did not start");
    return done_testing();
  }
  for (int nparts = 2; nparts <= MAX_PARTS; nparts++)
    for (int d = 0; d < 2; d++) {
      enum nd_dtype dtype = d ? ND_F64 : ND_F32;
      int bad = check(nparts, dtype);
      ok(bad == 0, "all-reduce of %d %s parts on CPU: every part equals the rank-order sum bit for bit (%d differ)",
         nparts, d ? "f64" : "f32", bad);
    }
  starpu_shutdown();
  return done_testing();
}
