/* The CPU backend's all-reduce (the implementation every CPU all-reduce task
 * runs) with 2, 3 and 4 parts in float32 and float64: afterwards every part
 * must hold, bit for bit, the sum in rank order ((p0 + p1) + p2) + p3. The values span many
 * magnitudes, so a sum in another order, or of fewer parts, gives other
 * bits; the training tests only see layouts with 2 participants, where
 * reverse order is the same sum. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "graph/ir.h"
#include "kernels/backend.h"
#include "tests/tap.h"

#define N         4096
#define MAX_PARTS 4

static uint64_t rng = 0x2545f4914f6cdd1du;

/* A value in +-[2^-20, 2^20], so that rounding depends on the order of the sum. */
static double next_value(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  double mant = 1.0 + (double)(rng >> 11) * 0x1.0p-53;
  int e = (int)(rng % 41) - 20;
  return (rng >> 3 & 1 ? -1 : 1) * ldexp(mant, e);
}

/* Runs the CPU all-reduce on nparts parts of type dtype; returns how many
 * parts differ in any bit from the rank-order sum, or -1 if it failed. */
static int check(int nparts, enum nd_dtype dtype) {
  size_t es = dtype == ND_F64 ? sizeof(double) : sizeof(float);
  static double in[MAX_PARTS][N];
  nd_tensor_desc d[MAX_PARTS] = {{0}};
  for (int p = 0; p < nparts; p++) {
    d[p].data = malloc(N * es);
    d[p].ndim = 1;
    d[p].shape[0] = N;
    d[p].strides[0] = 1;
    for (int i = 0; i < N; i++) {
      in[p][i] = next_value();
      if (dtype == ND_F64)
        ((double *)d[p].data)[i] = in[p][i];
      else
        ((float *)d[p].data)[i] = (float)in[p][i];
    }
  }
  nd_task irt = {.kind = ND_TASK_ALLREDUCE};
  irt.a.coll = (struct nd_coll_args){.n = N, .nparts = nparts, .dtype = dtype};
  nd_kcall call = {.t = d, .n = nparts, .task = &irt};
  int rc = nd__backend(ND_BACKEND_CPU)->impl[ND_TASK_ALLREDUCE](&call);
  int bad = 0;
  for (int p = 0; p < nparts; p++) {
    int differs = 0;
    for (int i = 0; i < N; i++) {
      if (dtype == ND_F64) {
        double s = in[0][i];
        for (int q = 1; q < nparts; q++) s += in[q][i];
        differs |= memcmp(&s, (double *)d[p].data + i, sizeof s) != 0;
      } else {
        float s = (float)in[0][i];
        for (int q = 1; q < nparts; q++) s += (float)in[q][i];
        differs |= memcmp(&s, (float *)d[p].data + i, sizeof s) != 0;
      }
    }
    bad += differs;
    free(d[p].data);
  }
  return rc ? -1 : bad;
}

int main(void) {
  for (int nparts = 2; nparts <= MAX_PARTS; nparts++)
    for (int d = 0; d < 2; d++) {
      int bad = check(nparts, d ? ND_F64 : ND_F32);
      ok(bad == 0, "all-reduce of %d %s parts on CPU: every part equals the rank-order sum bit for bit (%d differ)",
         nparts, d ? "f64" : "f32", bad);
    }
  return done_testing();
}
