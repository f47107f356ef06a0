/* Internal to tasks/: all-reduces whose participants sit on different devices
 * (run by the devices' collective library: nd_backend_ops.allreduce_part;
 * the GPU backend's document tells which). Such a collective is
 * one task per participant, pinned to its device's worker, and every
 * collective goes through one global order, the order of submission:
 * a gate task (no code, no transfer) reads every participant's part and
 * takes the order's token (RW); the participants' tasks then read the token
 * and write their part. So collective k's participants start only when all
 * of its inputs exist and every task of collective k - 1 has ended: the
 * argument that no device can wait for a peer that waits for it is in the
 * GPU backend's document. tests/test_coll_order runs this ordering on CPU
 * workers with a barrier standing for the library. */
#ifndef ND_TASKS_COLLECTIVE_H
#define ND_TASKS_COLLECTIVE_H

#include <starpu.h>

#include "tasks/codelets.h"

/* the most participants of one collective on devices */
#define ND_COLL_MAX_PARTS 64

/* What participant `rank` of an all-reduce task gets (its task's argument). */
typedef struct nd__coll_part {
  const nd__task_ctx *ctx; /* the all-reduce: its size, type and kernel table */
  int comm, rank;          /* the backend's communicator, and the participant's rank in it */
} nd__coll_part;

/* An all-reduce task's participants: who runs where. */
typedef struct nd__coll_task {
  int n;
  int worker[ND_COLL_MAX_PARTS]; /* StarPU worker of each participant */
  nd__coll_part part[ND_COLL_MAX_PARTS];
} nd__coll_task;

/* Submits one collective after all collectives submitted before it: the gate,
 * then for each participant i a task of cl on worker workers[i] with
 * parts[i] (RW) and the token (R) as its buffers, and args[i] as its
 * argument (cl: STARPU_VARIABLE_NBUFFERS). done (NULL: none) is participant
 * 0's callback, with done_arg: the collective's one report to an observer.
 * Returns 0 or StarPU's error. */
int nd__coll_submit(struct starpu_codelet *cl, const starpu_data_handle_t *parts, const int *workers, void *const *args,
                    int n, void (*done)(void *), void *done_arg);
/* Unregisters the order's token (when StarPU stops; it waits for the tasks). */
void nd__coll_stop(void);
/* The codelet of a participant on devices (argument: an nd__coll_part): its
 * worker's backend's allreduce_part on the part, on the worker's queue. */
struct starpu_codelet *nd__coll_device_codelet(void);

#endif
