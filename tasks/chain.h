/* Chains of tasks that run as one StarPU task each.
 *
 * Between two tasks on a worker StarPU spends 10-20 us here (ending the
 * task, releasing its data and successors, the pop, fetching the next
 * task's buffers), against 1-4 us for empty tasks: after a kernel that
 * streamed megabytes its structures are cold (docs/scheduler.md, *Where the
 * last percent goes*). A layer's forward or input gradient on one rank is a
 * chain of 5-10 small tasks, each waiting only for the one before it besides
 * what the chain's first one waits for; its weight gradients 4-6 tasks;
 * its AdamW updates, after the gradient norm, are 2-12 tasks that wait for
 * nothing else. Such a chain is submitted as one task whose function runs
 * its members' kernels in order, on a CPU worker or on a device whose
 * backend has a kernel for every member. Each StarPU task also costs its
 * submitting thread a few microseconds (docs/nodes.md, Submission), which
 * chains pay once. The IR, the priorities, the trace and the calibration
 * still see every member: the chain's task times each member and reports
 * it as a task of its own. runtime.chain_tasks: false submits every task
 * alone. */
#ifndef ND_TASKS_CHAIN_H
#define ND_TASKS_CHAIN_H

#include <starpu.h>
#include <stdint.h>

#include "graph/ir.h"
#include "tasks/codelets.h"

/* Which tasks of g run chained, in len[n_tasks]: len[i] > 1 when task i
 * leads the chain of tasks i .. i + len[i] - 1, 1 when it runs alone, 0 when
 * an earlier task's chain holds it. Consecutive tasks (in the graph's order,
 * StarPU's submission order) join when they are of one rank, micro-batch,
 * layer and phase (F, B, W or the optimizer), neither is a collective, and
 * their classes are equal (cls[i]: the device backends that can run task i,
 * a bit each; NULL: all alike), since a chain runs only where all its
 * members can. Under a fixed-order scheduler (`fixed`) W tasks stay alone:
 * the zero-bubble orders move single weight gradients into the gaps. With
 * `position` (that order: minus each task's position in its home worker's
 * sequence, home[i] its worker) tasks join only when each comes right after
 * the one before on that worker; then `position` is renumbered so that each
 * worker's sequence counts a chain once. 0 or ND_ENOMEM. */
int nd__chain_plan(const nd_graph *g, const int *home, int *position, int fixed, const uint8_t *cls, int32_t *len);

/* One chain of a graph, ready to submit every run. */
typedef struct nd__chain {
  int32_t first, n;                   /* members: tasks first .. first + n - 1 */
  int n_buf;                          /* distinct tensors the members access */
  starpu_data_handle_t *handle;       /* [n_buf] */
  enum starpu_data_access_mode *mode; /* [n_buf]: W when the first access writes only, else RW if any writes */
  int *slot;                          /* per member access, in order: its index in handle */
  double *start_us, *end_us;          /* [n]: when each member ran, written by the worker */
  const nd__task_ctx *ctx;            /* [n]: the members' */
} nd__chain;

/* The chain of g's tasks first .. first + n - 1, whose tensor x is the handle
 * handles[tensor[x]] and whose task i's context is ctx[i]. 0 or ND_ENOMEM. */
int nd__chain_build(nd__chain *chain, const nd_graph *g, int32_t first, int32_t n, const int32_t *tensor,
                    const starpu_data_handle_t *handles, const nd__task_ctx *ctx);
void nd__chain_free(nd__chain *chain);

/* The codelet every chain runs with (CPU workers, and devices whose backend
 * runs every member), and the callback
 * that reports its members to the observer and starts their forwarding. */
struct starpu_codelet *nd__chain_codelet(void);
void nd__chain_done(void *chain);

#endif
