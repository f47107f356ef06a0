/* Internal: the one interface through which a backend (a folder under
 * kernels/: cpu, opencl, cuda) offers what it runs. Each fills one
 * nd_backend_ops: start and stop of its device contexts and libraries, the
 * calling worker's queue, and per task kind a built-in implementation that
 * receives the task's tensors as descriptors in the order of the kind's row
 * (graph/kinds.c). tasks/ turns StarPU buffers into descriptors and calls
 * what the kernel table (kernels/registry.h) selected for the worker's
 * device; kernels/backends.c lists the backends compiled in. Nothing
 * outside kernels/ names a device API: tasks/runtime.c starts each backend's
 * workers through its entries here. */
#ifndef ND_KERNELS_BACKEND_H
#define ND_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "data/dataset.h"
#include "graph/ir.h"
#include "graph/kinds.h"
#include "ndgraph/kernel.h"

/* The values of one submission that the graph does not hold. */
typedef struct nd_step {
  nd_dataset *data;  /* where load_batch reads (its failures kept there) */
  int64_t seq_base;  /* first global sequence of this batch */
  int64_t seq_limit; /* sequences from here on count for nothing (evaluation tail) */
  float loss_scale;  /* 1 / tokens of the global batch */
  float lr, beta1, beta2, eps, weight_decay, grad_clip;
  int adam_t; /* AdamW step number, from 1 */
  /* generation (graph/generate.c): the ids load_batch takes (NULL: it reads
   * data), and the position of the first of them in the sequence */
  const int32_t *tokens;
  int64_t pos;
} nd_step;

/* One call of an implementation: the task's tensors as descriptors in its
 * row's order (data: a host pointer on the CPU, the buffer handle on a device; an absent
 * optional tensor has data NULL and ndim 0), the IR task, and the step. */
typedef struct nd_kcall {
  const nd_tensor_desc *t;
  int n;
  const nd_task *task;
  const nd_graph *graph; /* NULL outside a graph (kernel tests) */
  const nd_step *step;
  const nd_access *acc; /* the task's accesses, or NULL */
  nd_kernel_args a;     /* what a plugin's kernel gets: kind, beta, queue, device */
} nd_kcall;

/* A built-in implementation. Returns 0 or a backend error code. */
typedef int (*nd_impl_fn)(const nd_kcall *c);

struct starpu_conf;
struct starpu_codelet;
/* The function StarPU calls on a worker for a task: its buffers and argument. */
typedef void (*nd_worker_fn)(void *buffers[], void *arg);

typedef struct nd_backend_ops {
  int device; /* enum nd_kernel_backend; its name: nd_device_name (common/device.h) */

  /* Its workers, as tasks/runtime.c starts them (the CPU's are StarPU's own):
   * StarPU's enum starpu_worker_archtype for them; the devices on this
   * machine before StarPU starts (NULL: only StarPU's start can tell);
   * configure asks conf for n of them, given the cores the CPU workers leave;
   * and how they weigh on the cores: a driver thread per device that takes
   * a CPU worker's core, or threads of their own (a CPU-type device) that
   * share the cores left when runtime.workers is not set. */
  int worker_type;
  int (*present)(void);
  void (*configure)(struct starpu_conf *conf, int n, long spare_cores);
  int driver_takes_core, shares_cores;
  /* Where a count asked for is more than StarPU found: what to check, or NULL. */
  const char *missing_hint;
  /* Puts fn in a codelet as its implementation for this backend's workers,
   * with the flags it needs (asynchronous streams), and what fn's kernels
   * receive for a StarPU vector buffer: a pointer, or the buffer's handle. */
  void (*attach)(struct starpu_codelet *cl, nd_worker_fn fn);
  void *(*buffer_data)(void *buffer);

  /* After StarPU started the backend's workers: programs, libraries. NULL: nothing to do. */
  int (*start)(nd_error *err);
  void (*stop)(void);
  /* The calling worker's queue or stream (a plugin's nd_kernel_args.queue), and device number. */
  void *(*queue)(int *device);
  /* Whether a task of a kind with an implementation can run here (NULL: all).
   * A backend prefers impl to kernel where it gives both (codelets): impl
   * then sees the task (train.precision bf16), kernel is what kernel-check calls. */
  int (*supports)(const nd_task *t);
  /* Per kind: the built-in implementation, or NULL. Replaceable kinds may give
   * theirs in the plugin signature instead (kernel), as plugins do. */
  nd_impl_fn impl[ND_TASK_KIND_COUNT];
  nd_kernel_fn kernel[ND_TASK_KIND_COUNT];
  /* Per kind the backend does not run: why, in one line (its tasks run on
   * CPU workers). Every kind is implemented (impl or kernel) or declined
   * here, never both: a kind with neither was forgotten (tests/test_kinds).
   * The CPU backend declines nothing. */
  const char *declined[ND_TASK_KIND_COUNT];
  /* kernel-check on this backend: runs fn on host descriptors d (copied to
   * a device and back). NULL: the CPU (fn runs on d directly). Returns fn's
   * code, or a negative ND_E* with err set when no device is usable. */
  int (*check_call)(nd_kernel_fn fn, nd_tensor_desc *d, int n, nd_kernel_args *a, nd_error *err);
  /* After start: runtime.tf32, whether GEMMs may round their inputs to TF32
   * (tensor cores). NULL: the backend computes in fp32 only. */
  int (*set_tf32)(int on, nd_error *err);
  /* Collectives over several devices of this backend (its vendor's library).
   * comm_create: a communicator whose rank i is device devices[i], created
   * once per list (the same list gives the same number); returns its number
   * >= 0, or a negative ND_E* with err set. allreduce_part: rank `rank` of
   * communicator comm sums data (n elements, f64 or float) in place with its
   * peers, enqueued on the calling worker's stream; 0 or a backend error. */
  int (*comm_create)(const int *devices, int n, nd_error *err);
  int (*allreduce_part)(void *data, int64_t n, int f64, int comm, int rank);
  /* The name of device devid as the run header shows it ("model, memory"):
   * writes at most size bytes to out; 0, or -1 when there is no such device. */
  int (*describe)(int devid, char *out, size_t size);
} nd_backend_ops;

/* The backends compiled in (kernels/backends.c), by device; NULL when absent. */
const nd_backend_ops *nd__backend(int device);
/* Asks conf for want[b] devices of each backend b (configure), and for no
 * device of a kind no backend here runs (StarPU's default is all). */
void nd__backends_configure(struct starpu_conf *conf, const int want[ND_BACKEND_COUNT], long spare_cores);
/* The backend StarPU worker `worker` runs tasks on (ND_BACKEND_CPU for a CPU worker). */
int nd__worker_backend(int worker);

/* The descriptors of task t in its row's order from its buffers in access
 * order: ptrs (NULL: shapes only, data NULL) and, for buffers whose shape is
 * their own size, count (elements; NULL: 0); bf16 (NULL: none) marks the
 * buffers whose tensor is bf16. Sets the call's kind and beta.
 * role, when not NULL, gets each descriptor's role. d has room for
 * nd__layout_max(t) descriptors; returns how many were filled. */
int nd__kernel_layout(const nd_task *t, void *const *ptrs, const int64_t *count, const uint8_t *bf16, nd_tensor_desc *d,
                      nd_kernel_args *a, uint8_t *role);
static inline int nd__layout_max(const nd_task *t) { return t->n_access + ND_KIND_MAX_BUFFERS; }
/* Whether a weight descriptor (K, N) is stored (N, K): the kernels' trans_w. */
static inline int nd__weight_transposed(const nd_tensor_desc *w) { return w->strides[1] != 1; }

#endif
