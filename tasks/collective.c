/* The global order of collectives on devices, and the codelet of a
 * participant on the devices' collective library (tasks/collective.h). */
#include "tasks/collective.h"

#include <pthread.h>
#include <stdlib.h>

#include "kernels/backend.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static starpu_data_handle_t token; /* NULL until the first collective */

/* runs nowhere: StarPU ends it once its dependencies are met, moving no data */
static struct starpu_codelet gate = {
    .where = STARPU_NOWHERE, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "collective_gate"};

static int submit_gate(const starpu_data_handle_t *parts, int n) {
  struct starpu_task *task = starpu_task_create();
  task->cl = &gate;
  task->nbuffers = n + 1;
  starpu_data_handle_t *h = task->handles;
  enum starpu_data_access_mode *m = task->modes;
  if (n + 1 > STARPU_NMAXBUFS) {
    /* StarPU frees the dynamic arrays with the task */
    h = task->dyn_handles = malloc((size_t)(n + 1) * sizeof *h);
    m = task->dyn_modes = malloc((size_t)(n + 1) * sizeof *m);
  }
  h[0] = token;
  m[0] = STARPU_RW;
  for (int i = 0; i < n; i++) h[i + 1] = parts[i], m[i + 1] = STARPU_R;
  return starpu_task_submit(task);
}

int nd__coll_submit(struct starpu_codelet *cl, const starpu_data_handle_t *parts, const int *workers, void *const *args,
                    int n, void (*done)(void *), void *done_arg) {
  pthread_mutex_lock(&lock);
  if (!token) starpu_void_data_register(&token);
  /* gate and participants in one critical section: two submitting threads
   * cannot interleave their collectives' tasks */
  int rc = submit_gate(parts, n);
  for (int i = 0; i < n && !rc; i++) {
    struct starpu_task *task = starpu_task_create();
    task->cl = cl;
    task->cl_arg = args[i];
    task->nbuffers = 2;
    task->handles[0] = parts[i];
    task->modes[0] = STARPU_RW;
    task->handles[1] = token;
    task->modes[1] = STARPU_R;
    task->execute_on_a_specific_worker = 1;
    task->workerid = (unsigned)workers[i];
    /* its peers may already spin in the collective: first in the worker's queue */
    task->priority = STARPU_MAX_PRIO;
    task->name = "allreduce_part";
    task->callback_arg_free = 0;
    if (i == 0 && done) task->callback_func = done, task->callback_arg = done_arg;
    rc = starpu_task_submit(task);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

void nd__coll_stop(void) {
  pthread_mutex_lock(&lock);
  if (token) starpu_data_unregister(token);
  token = NULL;
  pthread_mutex_unlock(&lock);
}

static void run_part(void *buffers[], void *arg) {
  const nd__coll_part *p = arg;
  const nd_task *t = p->ctx->task;
  int dev = nd__worker_backend(starpu_worker_get_id_check());
  void *data = nd__backend(dev)->buffer_data(buffers[0]);
  int rc = nd__backend(dev)->allreduce_part(data, t->a.coll.n, t->a.coll.dtype == ND_F64, p->comm, p->rank);
  if (rc) nd__kernel_report(p->ctx->kernels, ND_TASK_ALLREDUCE, dev, rc);
}

static struct starpu_codelet part;

/* on the workers of every backend with a collective library */
static void build(void) {
  starpu_codelet_init(&part);
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (ops && ops->allreduce_part && ops->attach) ops->attach(&part, run_part);
  }
  part.nbuffers = STARPU_VARIABLE_NBUFFERS;
  part.name = "allreduce_device";
}

struct starpu_codelet *nd__coll_device_codelet(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, build);
  return &part;
}
