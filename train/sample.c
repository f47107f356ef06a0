/* The next token from the logits: greedy, or drawn with a temperature and a
 * top-k cut from a seeded splitmix64 (the same seed gives the same text). */
#include "train/sample.h"

#include <math.h>
#include <stdlib.h>

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static const float *by_logit; /* qsort's comparison needs the logits */
static int larger_first(const void *a, const void *b) {
  int i = *(const int *)a, j = *(const int *)b;
  if (by_logit[i] != by_logit[j]) return by_logit[i] > by_logit[j] ? -1 : 1;
  return i - j;
}

int nd__sample(const float *logits, int V, double temperature, int top_k, uint64_t *rng) {
  int best = 0;
  for (int v = 1; v < V; v++)
    if (logits[v] > logits[best]) best = v;
  if (temperature == 0.0) return best;
  /* the ids kept, larger logits first: all, or the top k */
  int n = top_k > 0 && top_k < V ? top_k : V;
  int *ids = malloc((size_t)V * sizeof *ids);
  if (!ids) return best;
  for (int v = 0; v < V; v++) ids[v] = v;
  if (n < V) {
    by_logit = logits;
    qsort(ids, (size_t)V, sizeof *ids, larger_first);
  }
  double sum = 0.0;
  for (int i = 0; i < n; i++) sum += exp(((double)logits[ids[i]] - logits[best]) / temperature);
  double u = (double)(next(rng) >> 11) * 0x1.0p-53 * sum, acc = 0.0;
  int id = ids[n - 1];
  for (int i = 0; i < n; i++) {
    acc += exp(((double)logits[ids[i]] - logits[best]) / temperature);
    if (u < acc) {
      id = ids[i];
      break;
    }
  }
  free(ids);
  return id;
}
