/* A ready queue of StarPU tasks ordered by priority, FIFO among equals: a
 * binary heap, because a stealer may have to take a task from the middle
 * (the best one it is allowed to run). Not locked: its owner's lock guards it. */
#ifndef ND_SCHEDULER_QUEUE_H
#define ND_SCHEDULER_QUEUE_H

#include <stdint.h>

struct starpu_task;

/* StarPU worker types that costs are kept for (CPU and each device's). */
#define ND_QUEUE_TYPES 4

typedef struct nd_queue_item {
  int priority;
  uint64_t order; /* arrival, for FIFO among equal priorities */
  struct starpu_task *task;
  double cost;                    /* expected microseconds on the owner (0: unknown) */
  double by_type[ND_QUEUE_TYPES]; /* expected microseconds per StarPU worker type (NAN: unknown) */
} nd_queue_item;

typedef struct nd_queue {
  nd_queue_item *items;
  int n, cap;
  uint64_t arrivals;
} nd_queue;

/* by_type: ND_QUEUE_TYPES costs, or NULL (unknown). 0 or ND_ENOMEM. */
int nd_queue_push(nd_queue *q, struct starpu_task *task, int priority, double cost, const double *by_type);
/* The best item that accept() allows, or -1; scans in heap order, so the top
 * is tried first and the scan stops at the first match when the top fits. */
int nd_queue_find(const nd_queue *q, int (*accept)(const nd_queue *q, int at, void *), void *arg);
/* The cost of the items that come before item `at` (higher priority, or
 * equal and older): what its owner runs first. */
double nd_queue_cost_ahead(const nd_queue *q, int at);
struct starpu_task *nd_queue_take(nd_queue *q, int at);
void nd_queue_free(nd_queue *q);

#endif
