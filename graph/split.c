/* The stage split that balances unequal pipeline stages (see split.h). */
#include "graph/split.h"

#include <stdlib.h>

#include "common/error.h"

int nd_stage_split(int p, int L, const double *other, const double *per_layer, int *split) {
  if (p < 1 || L < p) return ND_EINVAL;
  size_t cols = (size_t)L + 1;
  double *best = malloc((size_t)(p + 1) * cols * sizeof *best);  // (p + 1, L + 1): slowest stage of the best prefix
  int *choice = malloc((size_t)(p + 1) * cols * sizeof *choice); // (p + 1, L + 1): layers of its last stage
  if (!best || !choice) {
    free(best);
    free(choice);
    return ND_ENOMEM;
  }
#define BEST(s, l)   best[(size_t)(s)*cols + (size_t)(l)]
#define CHOICE(s, l) choice[(size_t)(s)*cols + (size_t)(l)]
  for (int l = 0; l <= L; l++) BEST(0, l) = l == 0 ? 0 : 1e300;
  for (int s = 1; s <= p; s++)
    for (int l = 0; l <= L; l++) {
      BEST(s, l) = 1e300, CHOICE(s, l) = 0;
      for (int n = 1; n <= l; n++) {
        double t = other[s - 1] + n * per_layer[s - 1], m = BEST(s - 1, l - n) > t ? BEST(s - 1, l - n) : t;
        if (m < BEST(s, l)) BEST(s, l) = m, CHOICE(s, l) = n;
      }
    }
  for (int s = p, l = L; s >= 1; l -= CHOICE(s, l), s--) split[s - 1] = CHOICE(s, l);
#undef BEST
#undef CHOICE
  free(best);
  free(choice);
  return 0;
}

void nd_stage_times(const nd_graph *g, const double *us, double *layer_us, double *other_us) {
  for (int s = 0; s < g->pp; s++) layer_us[s] = other_us[s] = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (t->layer >= 0 && t->layer < g->L)
      layer_us[t->rank.pp] += us[i];
    else
      other_us[t->rank.pp] += us[i];
  }
}
