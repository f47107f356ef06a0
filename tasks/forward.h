/* Forwarding: an output goes to the memory node of the task that next reads
 * it as soon as its producer ends, where that reader's home is on another
 * node (a device). StarPU itself copies it only when the reader is popped,
 * and the device then waits for the copy (docs/scheduler.md, *Transfers*). */
#ifndef ND_TASKS_FORWARD_H
#define ND_TASKS_FORWARD_H

#include <starpu.h>
#include <stdint.h>

#include "graph/ir.h"

typedef struct nd__forward_item {
  starpu_data_handle_t handle;
  unsigned node; /* the reader's memory node */
} nd__forward_item;

/* The copies each task starts when it ends: task i's are
 * item[start[i]] .. item[start[i + 1] - 1]. */
typedef struct nd__forward {
  int32_t *start; /* [n_tasks + 1] */
  nd__forward_item *item;
} nd__forward;

/* From each task's home worker (home[i], -1: none) and each worker's memory
 * node (node_of[w]), for the graph g whose tensor t is the handle
 * handles[tensor[t]]. 0 or ND_ENOMEM. */
int nd__forward_build(nd__forward *f, const nd_graph *g, const int *home, const unsigned *node_of,
                      const int32_t *tensor, const starpu_data_handle_t *handles);
void nd__forward_free(nd__forward *f);

/* How many copies task i starts (0 when nothing is built). */
static inline int32_t nd__forward_count(const nd__forward *f, int32_t i) {
  return f->start ? f->start[i + 1] - f->start[i] : 0;
}

/* Starts task i's copies (asynchronous; from its callback). */
void nd__forward_start(const nd__forward *f, int32_t i);

#endif
