/* Binary max-heap on (priority, earliest arrival). */
#include "scheduler/queue.h"

#include <math.h>
#include <stdlib.h>

#include "common/error.h"

static int before(const nd_queue_item *a, const nd_queue_item *b) {
  return a->priority != b->priority ? a->priority > b->priority : a->order < b->order;
}

static void swap(nd_queue_item *a, nd_queue_item *b) {
  nd_queue_item t = *a;
  *a = *b;
  *b = t;
}

static void sift_up(nd_queue *q, int i) {
  while (i > 0 && before(&q->items[i], &q->items[(i - 1) / 2])) {
    swap(&q->items[i], &q->items[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
}

static void sift_down(nd_queue *q, int i) {
  for (;;) {
    int best = i, l = 2 * i + 1, r = l + 1;
    if (l < q->n && before(&q->items[l], &q->items[best])) best = l;
    if (r < q->n && before(&q->items[r], &q->items[best])) best = r;
    if (best == i) return;
    swap(&q->items[i], &q->items[best]);
    i = best;
  }
}

int nd_queue_push(nd_queue *q, struct starpu_task *task, int priority, double cost, const double *by_type) {
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 64;
    nd_queue_item *items = realloc(q->items, (size_t)cap * sizeof *items);
    if (!items) return ND_ENOMEM;
    q->items = items;
    q->cap = cap;
  }
  nd_queue_item *it = &q->items[q->n];
  *it = (nd_queue_item){priority, q->arrivals++, task, cost, {0}};
  for (int k = 0; k < ND_QUEUE_TYPES; k++) it->by_type[k] = by_type ? by_type[k] : NAN;
  sift_up(q, q->n++);
  return 0;
}

int nd_queue_find(const nd_queue *q, int (*accept)(const nd_queue *q, int at, void *), void *arg) {
  if (q->n == 0) return -1;
  if (accept(q, 0, arg)) return 0;
  int best = -1;
  for (int i = 1; i < q->n; i++)
    if ((best < 0 || before(&q->items[i], &q->items[best])) && accept(q, i, arg)) best = i;
  return best;
}

double nd_queue_cost_ahead(const nd_queue *q, int at) {
  double sum = 0;
  for (int i = 0; i < q->n; i++)
    if (before(&q->items[i], &q->items[at])) sum += q->items[i].cost;
  return sum;
}

struct starpu_task *nd_queue_take(nd_queue *q, int at) {
  struct starpu_task *task = q->items[at].task;
  q->items[at] = q->items[--q->n];
  if (at < q->n) {
    sift_up(q, at);
    sift_down(q, at);
  }
  return task;
}

void nd_queue_free(nd_queue *q) {
  free(q->items);
  *q = (nd_queue){0};
}
