/* Registration of the IR's tensors and submission of its tasks. */
#include "tasks/exec.h"

#include <starpu.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/error.h"
#include "common/hash.h"
#include "kernels/registry.h"
#include "tasks/codelets.h"
#include "tasks/collective.h"
#include "tasks/forward.h"
#include "tasks/chain.h"
#include "tasks/mpi.h"

#define ND_ALIGN      64
#define ND_MAX_GRAPHS 4

typedef struct bound_graph {
  const nd_graph *g;
  int32_t *tensor;   /* [g->n_tensors]: index of the owner's tensor */
  nd__task_ctx *ctx; /* [g->n_tasks] */
  int *priority;     /* [g->n_tasks] or NULL */
  uint32_t *workers; /* [g->n_tasks][mask_words] worker bitmaps, or NULL */
  int mask_words;
  int *home;            /* [g->n_tasks] or NULL */
  uint8_t *visit;       /* [g->n_tasks] several processes: this one takes part in the task */
  int *run_on;          /* [g->n_tasks] several processes: the process that runs the task */
  nd__coll_task **coll; /* [g->n_tasks] all-reduces run per participant (on devices), else NULL; or NULL */
  nd__forward forward;  /* outputs sent ahead to the devices that read them (tasks/forward.h) */
  int32_t *chain_len;   /* [g->n_tasks] tasks run as chains (tasks/chain.h), or NULL */
  nd__chain *chain;     /* [g->n_tasks] the chain each leading task submits */
} bound_graph;

struct nd_exec {
  const nd_graph *owner;
  starpu_data_handle_t *handles; /* [owner->n_tensors] */
  void **ptr;                    /* [owner->n_tensors] */
  void **blocks;                 /* [ranks * kinds] (+1 for rank-less statistics) */
  int n_blocks;
  int32_t *by_name;          /* owner tensors sorted by name */
  nd_step step;              /* the values of the submission in flight */
  nd_exec_observer observer; /* observer.task_done NULL: none */
  bound_graph graphs[ND_MAX_GRAPHS];
  int n_graphs;
  nd_kernels *kernels; /* NULL: the built-ins */
  /* several processes (tasks/mpi.h): procs > 1 */
  int procs, me;
  int *proc;           /* [owner->n_tensors]: the process that owns each tensor */
  uint8_t *reader;     /* [owner->n_tensors * procs]: processes that may hold a copy */
  int64_t *held;       /* [ranks]: bytes this process allocated in main memory for each rank's tensors */
  int64_t device_peak; /* the most StarPU held on device memory nodes at the end of a step */
  int64_t submitted;   /* StarPU tasks the last run submitted (a chain is one) */
  int64_t buffers;     /* and the buffers they declared */
  double submit_s;     /* and the time its submission loop took, waits for StarPU's queues included */
  double submit_cpu_s; /* and the submitting thread's CPU time in it */
};

/* StarPU-MPI tags: the same for a tensor on every process, whichever part
 * of the step each one built (under mpirun each builds its share alone,
 * docs/nodes.md), so a hash of the tensor's name (unique in the step) and
 * of the executor's number (all processes create the same executors in
 * order). A process exchanges only tensors its own graph holds, so tags
 * that differ within each process are enough (check_tags). */
static int64_t executors;

static int64_t tag_of(int64_t executor, const char *name) {
  uint64_t h = nd__fnv(ND_FNV_BASIS, &executor, sizeof executor);
  return (int64_t)(nd__fnv(h, name, strlen(name)) >> 1); /* StarPU-MPI's tags are signed */
}

static int cmp_tag(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* tag[i] for each tensor of the owner graph: ND_ERUNTIME if two are equal. */
static int check_tags(const nd_graph *g, const int64_t *tag, nd_error *err) {
  int64_t *sorted = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *sorted);
  if (!sorted) return nd__fail(err, ND_ENOMEM, "executor: out of memory");
  memcpy(sorted, tag, (size_t)g->n_tensors * sizeof *sorted);
  qsort(sorted, (size_t)g->n_tensors, sizeof *sorted, cmp_tag);
  int64_t same = -1;
  for (int32_t i = 1; i < g->n_tensors && same < 0; i++)
    if (sorted[i] == sorted[i - 1]) same = sorted[i];
  free(sorted);
  if (same < 0) return 0;
  const char *a = NULL, *b = NULL;
  for (int32_t i = 0; i < g->n_tensors && !b; i++)
    if (tag[i] == same) *(a ? &b : &a) = g->tensors[i].name;
  return nd__fail(err, ND_ERUNTIME, "mpirun: tensors %s and %s hash to the same StarPU-MPI tag", a, b);
}

static int64_t round_up(int64_t x) { return (x + ND_ALIGN - 1) / ND_ALIGN * ND_ALIGN; }

/* A block of 2 MiB or more starts on a 2 MiB boundary and asks for
 * transparent huge pages: one TLB entry per 2 MiB instead of 512, and
 * within each 2 MiB the same mapping to cache sets in every process instead
 * of whatever 4 KiB pages it was given (on the benchmark's model, steps up to
 * 6% shorter, none longer: docs/scheduler.md, *Where the last percent goes*). Advice only:
 * the kernel may decline. */
#define ND_HUGE_PAGE ((size_t)2 << 20)
static void *alloc_block(size_t bytes) {
  size_t align = bytes >= ND_HUGE_PAGE ? ND_HUGE_PAGE : ND_ALIGN;
  void *p;
  if (posix_memalign(&p, align, bytes)) return NULL;
#ifdef MADV_HUGEPAGE
  if (align == ND_HUGE_PAGE) (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
  memset(p, 0, bytes);
  return p;
}

/* Sorting by name: a tensor's name is the first member of nd_tensor, so a
 * pointer to the tensor is one to its name (no global for the comparison). */
static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int sort_by_name(nd_exec *ex) {
  const nd_graph *g = ex->owner;
  const char **names = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *names);
  if (!names) return ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tensors; i++) names[i] = g->tensors[i].name;
  qsort(names, (size_t)g->n_tensors, sizeof *names, cmp_name);
  for (int32_t i = 0; i < g->n_tensors; i++)
    ex->by_name[i] = (int32_t)((const nd_tensor *)(const void *)names[i] - g->tensors);
  free(names);
  return 0;
}

static int32_t find_owner(const nd_exec *ex, const char *name) {
  int32_t lo = 0, hi = ex->owner->n_tensors - 1;
  while (lo <= hi) {
    int32_t mid = (lo + hi) / 2;
    int c = strcmp(ex->owner->tensors[ex->by_name[mid]].name, name);
    if (c == 0) return ex->by_name[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

/* One block per (rank, tensor kind): parameters, gradients, optimizer states
 * and activations of a rank are each one allocation. */
static int allocate(nd_exec *ex) {
  const nd_graph *g = ex->owner;
  int nranks = g->dp * g->pp * g->tp;
  ex->n_blocks = nranks * ND_TENSOR_KIND_COUNT;
  int64_t *size = calloc((size_t)ex->n_blocks, sizeof *size);
  ex->blocks = calloc((size_t)ex->n_blocks, sizeof *ex->blocks);
  if (!size || !ex->blocks) {
    free(size);
    return ND_ENOMEM;
  }
  int64_t *offset = malloc((size_t)g->n_tensors * sizeof *offset);
  if (!offset) {
    free(size);
    return ND_ENOMEM;
  }
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    int b = nd_rank_index(g, t->home) * ND_TENSOR_KIND_COUNT + t->kind;
    offset[i] = size[b];
    /* another process's tensors: StarPU allocates copies when they come */
    if (!ex->proc || ex->proc[i] == ex->me) size[b] += round_up(t->bytes);
  }
  int rc = (ex->held = calloc((size_t)nranks, sizeof *ex->held)) ? 0 : ND_ENOMEM;
  for (int b = 0; b < ex->n_blocks && !rc; b++) {
    if (size[b] && !(ex->blocks[b] = alloc_block((size_t)size[b]))) rc = ND_ENOMEM;
    ex->held[b / ND_TENSOR_KIND_COUNT] += size[b];
  }
  for (int32_t i = 0; i < g->n_tensors && !rc; i++) {
    const nd_tensor *t = &g->tensors[i];
    int b = nd_rank_index(g, t->home) * ND_TENSOR_KIND_COUNT + t->kind;
    if (!ex->proc || ex->proc[i] == ex->me) ex->ptr[i] = (char *)ex->blocks[b] + offset[i];
  }
  free(size);
  free(offset);
  return rc;
}

int nd_exec_create(nd_exec **out, const nd_graph *owner, nd_error *err) {
  nd_exec *ex = calloc(1, sizeof *ex);
  if (!ex) return nd__fail(err, ND_ENOMEM, "executor: out of memory");
  ex->owner = owner;
  ex->handles = calloc((size_t)owner->n_tensors, sizeof *ex->handles);
  ex->ptr = calloc((size_t)owner->n_tensors, sizeof *ex->ptr);
  ex->by_name = malloc((size_t)owner->n_tensors * sizeof *ex->by_name);
  ex->procs = nd_mpi_size();
  ex->me = nd_mpi_rank();
  int rc = ex->procs > 1 ? nd_mpi_check_layout(owner, ex->procs, err) : 0;
  if (rc) {
    nd_exec_free(ex);
    return rc;
  }
  if (ex->procs > 1) {
    ex->proc = malloc((size_t)(owner->n_tensors ? owner->n_tensors : 1) * sizeof *ex->proc);
    ex->reader = calloc((size_t)owner->n_tensors * (size_t)ex->procs + 1, 1);
    if (!ex->proc || !ex->reader) {
      nd_exec_free(ex);
      return nd__fail(err, ND_ENOMEM, "executor: out of memory");
    }
    for (int32_t i = 0; i < owner->n_tensors; i++)
      ex->proc[i] = nd_mpi_process_of(owner, owner->tensors[i].home, ex->procs);
  }
  if (!ex->handles || !ex->ptr || !ex->by_name || allocate(ex)) {
    int64_t bytes = 0;
    for (int32_t i = 0; i < owner->n_tensors; i++) bytes += owner->tensors[i].bytes;
    nd_exec_free(ex);
    return nd__fail(err, ND_ENOMEM,
                    "executor: out of memory allocating %.2f GB of tensors for %d ranks (model.n_layer, "
                    "model.n_embd, train.micro_batch_size and parallelism.* set it; `ndgraph plan` shows it per rank)",
                    (double)bytes / 1e9, owner->dp * owner->pp * owner->tp);
  }
  int64_t *tag = ex->procs > 1 ? malloc((size_t)(owner->n_tensors ? owner->n_tensors : 1) * sizeof *tag) : NULL;
  if (ex->procs > 1) {
    rc = tag ? 0 : nd__fail(err, ND_ENOMEM, "executor: out of memory");
    for (int32_t i = 0; i < owner->n_tensors && !rc; i++) tag[i] = tag_of(executors, owner->tensors[i].name);
    if (!rc) rc = check_tags(owner, tag, err);
    executors++;
    if (rc) {
      free(tag);
      nd_exec_free(ex);
      return rc;
    }
  }
  for (int32_t i = 0; i < owner->n_tensors; i++) {
    const nd_tensor *t = &owner->tensors[i];
    size_t elem = (size_t)nd_dtype_size(t->dtype);
    int local = ex->ptr[i] != NULL;
    starpu_vector_data_register(&ex->handles[i], local ? STARPU_MAIN_RAM : -1, (uintptr_t)ex->ptr[i],
                                (uint32_t)(t->bytes / (int64_t)elem), elem);
    starpu_data_set_name(ex->handles[i], t->name);
    if (ex->procs > 1) nd_mpi_register(ex->handles[i], tag[i], ex->proc[i]);
  }
  free(tag);
  rc = sort_by_name(ex);
  if (rc) {
    nd_exec_free(ex);
    return nd__fail(err, rc, "executor: out of memory");
  }
  rc = nd_exec_add_graph(ex, owner, err);
  if (rc) {
    nd_exec_free(ex);
    return rc;
  }
  *out = ex;
  return 0;
}

/* Several processes: the tasks this process takes part in, for every graph,
 * since a graph's readers decide what another graph's writers must tell. */
static int mark_visits(nd_exec *ex) {
  bound_graph *last = &ex->graphs[ex->n_graphs - 1];
  if (!(last->run_on = nd_mpi_task_processes(last->g, ex->procs))) return ND_ENOMEM;
  nd_mpi_mark_readers(last->g, last->run_on, last->tensor, ex->proc, ex->procs, ex->reader);
  for (int i = 0; i < ex->n_graphs; i++) {
    bound_graph *bg = &ex->graphs[i];
    if (!bg->visit && !(bg->visit = malloc((size_t)(bg->g->n_tasks ? bg->g->n_tasks : 1)))) return ND_ENOMEM;
    if (nd_mpi_visits(bg->g, bg->run_on, bg->tensor, ex->proc, ex->procs, ex->reader, ex->me, bg->visit))
      return ND_ENOMEM;
  }
  return 0;
}

int nd_exec_add_graph(nd_exec *ex, const nd_graph *g, nd_error *err) {
  if (ex->n_graphs == ND_MAX_GRAPHS) return nd__fail(err, ND_EINVAL, "executor: too many graphs");
  bound_graph *bg = &ex->graphs[ex->n_graphs];
  bg->g = g;
  bg->tensor = malloc((size_t)g->n_tensors * sizeof *bg->tensor);
  bg->ctx = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *bg->ctx);
  if (!bg->tensor || !bg->ctx) {
    free(bg->tensor);
    free(bg->ctx);
    return nd__fail(err, ND_ENOMEM, "executor: out of memory");
  }
  for (int32_t i = 0; i < g->n_tensors; i++) {
    bg->tensor[i] = g == ex->owner ? i : find_owner(ex, g->tensors[i].name);
    /* a tensor may be the start of its owner's: generation graphs of fewer
     * tokens than their owner's run on its buffers (train/generate.c) */
    if (bg->tensor[i] < 0 || ex->owner->tensors[bg->tensor[i]].bytes < g->tensors[i].bytes) {
      free(bg->tensor);
      free(bg->ctx);
      return nd__fail(err, ND_EINVAL, "executor: tensor %s has no match in the training graph", g->tensors[i].name);
    }
  }
  for (int32_t i = 0; i < g->n_tasks; i++)
    bg->ctx[i] = (nd__task_ctx){&g->tasks[i], g, &ex->step, &ex->observer, &bg->forward, ex->n_graphs, ex->kernels};
  bg->priority = NULL;
  bg->workers = NULL;
  bg->home = NULL;
  bg->visit = NULL;
  bg->coll = NULL;
  bg->run_on = NULL;
  bg->forward = (nd__forward){0};
  bg->chain_len = NULL;
  bg->chain = NULL;
  int which = ex->n_graphs++;
  if (ex->procs > 1 && mark_visits(ex)) return nd__fail(err, ND_ENOMEM, "executor: out of memory");
  return which;
}

/* Runs on the worker after the task: starts the copies of its outputs to
 * the devices that read them next, and copies what the observer needs, since
 * StarPU frees the profiling information with the task. */
static void task_done(void *arg) {
  const nd__task_ctx *c = arg;
  int32_t i = (int32_t)(c->task - c->graph->tasks);
  nd__forward_start(c->forward, i);
  struct starpu_task *task = starpu_task_get_current();
  struct starpu_profiling_task_info *info = task ? task->profiling_info : NULL;
  if (!info || !c->observer->task_done) return;
  c->observer->task_done(c->observer->user, c->which, i, starpu_timing_timespec_to_us(&info->start_time),
                         starpu_timing_timespec_to_us(&info->end_time), info->workerid);
}

/* Executors with an observer: StarPU's profiling is one switch for the
 * process, on while any executor observes (another trainer may). */
static atomic_int observing;

void nd_exec_observe(nd_exec *ex, const nd_exec_observer *obs) {
  int was = ex->observer.task_done != NULL, now = obs && obs->task_done;
  ex->observer = obs ? *obs : (nd_exec_observer){0};
  if (now && !was) atomic_fetch_add(&observing, 1);
  if (!now && was) atomic_fetch_sub(&observing, 1);
  if (now)
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  else if (atomic_load(&observing) == 0)
    starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
}

int nd_exec_observed(const nd_exec *ex) { return ex->observer.task_done != NULL; }

int nd_exec_set_hints(nd_exec *ex, int which, const int *priority, const uint32_t *workers, int mask_words) {
  bound_graph *bg = &ex->graphs[which];
  size_t n = (size_t)(bg->g->n_tasks ? bg->g->n_tasks : 1);
  free(bg->priority);
  free(bg->workers);
  bg->priority = priority ? malloc(n * sizeof *bg->priority) : NULL;
  bg->workers = workers ? malloc(n * (size_t)mask_words * sizeof *bg->workers) : NULL;
  bg->mask_words = mask_words;
  if ((priority && !bg->priority) || (workers && !bg->workers)) return ND_ENOMEM;
  if (priority) memcpy(bg->priority, priority, (size_t)bg->g->n_tasks * sizeof *priority);
  if (workers) memcpy(bg->workers, workers, (size_t)bg->g->n_tasks * (size_t)mask_words * sizeof *workers);
  return 0;
}

int nd_exec_set_homes(nd_exec *ex, int which, const int *home) {
  bound_graph *bg = &ex->graphs[which];
  free(bg->home);
  bg->home = home ? malloc((size_t)(bg->g->n_tasks ? bg->g->n_tasks : 1) * sizeof *bg->home) : NULL;
  if (home && !bg->home) return ND_ENOMEM;
  if (home) memcpy(bg->home, home, (size_t)bg->g->n_tasks * sizeof *home);
  nd__forward_free(&bg->forward);
  /* several processes: StarPU-MPI moves the data between them */
  if (!home || ex->procs > 1) return 0;
  unsigned node_of[STARPU_NMAXWORKERS] = {0};
  for (unsigned w = 0; w < starpu_worker_get_count() && w < STARPU_NMAXWORKERS; w++)
    node_of[w] = starpu_worker_get_memory_node(w);
  return nd__forward_build(&bg->forward, bg->g, home, node_of, bg->tensor, ex->handles);
}

void nd_exec_placement(const nd_exec *ex, int which, const int **home, const uint32_t **workers, int *mask_words) {
  const bound_graph *bg = &ex->graphs[which];
  *home = bg->home;
  *workers = bg->workers;
  *mask_words = bg->mask_words;
}

static void free_chains(bound_graph *bg) {
  if (bg->chain && bg->chain_len)
    for (int32_t i = 0; i < bg->g->n_tasks; i++)
      if (bg->chain_len[i] > 1) nd__chain_free(&bg->chain[i]);
  free(bg->chain);
  free(bg->chain_len);
  bg->chain = NULL;
  bg->chain_len = NULL;
}

int nd_exec_set_chains(nd_exec *ex, int which, const int32_t *len) {
  bound_graph *bg = &ex->graphs[which];
  free_chains(bg);
  if (!len) return 0;
  size_t n = (size_t)(bg->g->n_tasks ? bg->g->n_tasks : 1);
  bg->chain_len = malloc(n * sizeof *bg->chain_len);
  bg->chain = calloc(n, sizeof *bg->chain);
  int rc = bg->chain_len && bg->chain ? 0 : ND_ENOMEM;
  if (!rc) memcpy(bg->chain_len, len, (size_t)bg->g->n_tasks * sizeof *len);
  for (int32_t i = 0; i < bg->g->n_tasks && !rc; i++)
    if (len[i] > 1) rc = nd__chain_build(&bg->chain[i], bg->g, i, len[i], bg->tensor, ex->handles, bg->ctx);
  /* the chains not built are zeroed (calloc): freeing them frees nothing */
  if (rc) free_chains(bg);
  return rc;
}

int32_t nd_exec_forwarded(const nd_exec *ex, int which, int32_t task) {
  return nd__forward_count(&ex->graphs[which].forward, task);
}

int nd_exec_set_collective(nd_exec *ex, int which, int32_t task, const int *workers, int comm) {
  bound_graph *bg = &ex->graphs[which];
  if (!bg->coll && !workers) return 0;
  if (!bg->coll && !(bg->coll = calloc((size_t)bg->g->n_tasks, sizeof *bg->coll))) return ND_ENOMEM;
  free(bg->coll[task]);
  bg->coll[task] = NULL;
  if (!workers) return 0;
  int n = bg->g->tasks[task].a.coll.nparts;
  if (n > ND_COLL_MAX_PARTS) return ND_EINVAL;
  nd__coll_task *c = bg->coll[task] = malloc(sizeof *c);
  if (!c) return ND_ENOMEM;
  c->n = n;
  for (int p = 0; p < n; p++) {
    c->worker[p] = workers[p];
    c->part[p] = (nd__coll_part){&bg->ctx[task], comm, p};
  }
  return 0;
}

/* An all-reduce on the devices' collective library: its parts, in participant order, to the global order of collectives. */
static int submit_collective(nd_exec *ex, const bound_graph *bg, int32_t i) {
  const nd__coll_task *c = bg->coll[i];
  const nd_access *acc = nd_task_access(bg->g, &bg->g->tasks[i]);
  starpu_data_handle_t parts[ND_COLL_MAX_PARTS];
  void *args[ND_COLL_MAX_PARTS];
  for (int p = 0; p < c->n; p++) {
    parts[p] = ex->handles[bg->tensor[acc[p].tensor]];
    args[p] = (void *)&c->part[p];
  }
  /* participant 0 stands for the collective before an observer */
  return nd__coll_submit(nd__coll_device_codelet(), parts, c->worker, args, c->n,
                         ex->observer.task_done ? task_done : NULL, (void *)&bg->ctx[i]);
}

/* What a task carries besides its buffers. */
typedef struct fill_arg {
  nd_exec *ex;
  const bound_graph *bg;
  int32_t i;
} fill_arg;

static void fill(struct starpu_task *task, void *arg) {
  const fill_arg *f = arg;
  const bound_graph *bg = f->bg;
  int32_t i = f->i;
  task->cl_arg = &bg->ctx[i];
  /* the executor's: task insertion's default is to free them with the task */
  task->cl_arg_free = task->callback_arg_free = task->prologue_callback_arg_free = 0;
  task->name = nd_task_kind_name(bg->g->tasks[i].kind);
  if (f->ex->observer.task_done || nd__forward_count(&bg->forward, i) > 0) {
    task->callback_func = task_done;
    task->callback_arg = &bg->ctx[i];
  }
  if (bg->priority) task->priority = bg->priority[i];
  if (bg->home && bg->home[i] >= 0) task->sched_data = (void *)(intptr_t)(bg->home[i] + 1);
  uint32_t *mask = bg->workers ? &bg->workers[(size_t)i * bg->mask_words] : NULL;
  int restricted = 0;
  for (int w = 0; mask && w < bg->mask_words; w++) restricted |= mask[w] != 0;
  if (restricted) {
    /* the bitmap stays the executor's: StarPU only reads it */
    task->workerids_len = (unsigned)bg->mask_words;
    task->workerids = mask;
  }
}

static enum starpu_data_access_mode starpu_mode(uint8_t mode) {
  return mode == ND_ACCESS_R ? STARPU_R : mode == ND_ACCESS_W ? STARPU_W : STARPU_RW;
}

static enum starpu_data_access_mode *modes_of(struct starpu_task *task) {
  return task->dyn_modes ? task->dyn_modes : task->modes;
}

/* A task of codelet cl with n buffers, to be filled in. */
static struct starpu_task *new_task(struct starpu_codelet *cl, int n) {
  struct starpu_task *task = starpu_task_create();
  if (!task) return NULL;
  task->cl = cl;
  task->nbuffers = n;
  if (n > STARPU_NMAXBUFS) {
    /* StarPU frees the dynamic arrays with the task */
    task->dyn_handles = malloc((size_t)n * sizeof *task->dyn_handles);
    task->dyn_modes = malloc((size_t)n * sizeof *task->dyn_modes);
    if (!task->dyn_handles || !task->dyn_modes) {
      starpu_task_destroy(task);
      return NULL;
    }
  }
  return task;
}

static int submit_local(nd_exec *ex, const bound_graph *bg, int32_t i) {
  if (bg->coll && bg->coll[i]) return submit_collective(ex, bg, i);
  const nd_task *t = &bg->g->tasks[i];
  const nd_access *acc = nd_task_access(bg->g, t);
  struct starpu_task *task = new_task(nd__codelet(t->kind), t->n_access);
  if (!task) return ND_ENOMEM;
  fill(task, &(fill_arg){ex, bg, i});
  starpu_data_handle_t *handles = STARPU_TASK_GET_HANDLES(task);
  enum starpu_data_access_mode *modes = modes_of(task);
  for (int a = 0; a < t->n_access; a++) {
    handles[a] = ex->handles[bg->tensor[acc[a].tensor]];
    modes[a] = starpu_mode(acc[a].mode);
  }
  return starpu_task_submit(task);
}

/* A chain's task (tasks/chain.h): its first task's hints, a callback only
 * where someone is told (the observer, or a member's forwarding). */
static void fill_chain(struct starpu_task *task, void *arg) {
  const fill_arg *f = arg;
  nd__chain *chain = &f->bg->chain[f->i];
  fill(task, arg);
  task->cl_arg = chain;
  int report = f->ex->observer.task_done != NULL;
  for (int32_t k = 0; k < chain->n; k++) report |= nd__forward_count(&f->bg->forward, f->i + k) > 0;
  task->callback_func = report ? nd__chain_done : NULL;
  task->callback_arg = report ? chain : NULL;
}

/* A chain on this process: the members' buffers once each. */
static int submit_chain(nd_exec *ex, const bound_graph *bg, int32_t i) {
  nd__chain *chain = &bg->chain[i];
  struct starpu_task *task = new_task(nd__chain_codelet(), chain->n_buf);
  if (!task) return ND_ENOMEM;
  fill_chain(task, &(fill_arg){ex, bg, i});
  memcpy(STARPU_TASK_GET_HANDLES(task), chain->handle, (size_t)chain->n_buf * sizeof *chain->handle);
  memcpy(modes_of(task), chain->mode, (size_t)chain->n_buf * sizeof *chain->mode);
  return starpu_task_submit(task);
}

/* Several processes: the task runs on its rank's process; StarPU-MPI posts
 * the transfers on the processes that take part. */
static int submit_mpi(nd_exec *ex, const bound_graph *bg, int32_t i) {
  nd__chain *chain = bg->chain_len && bg->chain_len[i] > 1 ? &bg->chain[i] : NULL;
  if (chain)
    return nd_mpi_submit(nd__chain_codelet(), bg->run_on[i], chain->handle, chain->mode, chain->n_buf, fill_chain,
                         &(fill_arg){ex, bg, i});
  const nd_task *t = &bg->g->tasks[i];
  const nd_access *acc = nd_task_access(bg->g, t);
  starpu_data_handle_t handles[t->n_access > 0 ? t->n_access : 1];
  enum starpu_data_access_mode modes[t->n_access > 0 ? t->n_access : 1];
  for (int a = 0; a < t->n_access; a++) {
    handles[a] = ex->handles[bg->tensor[acc[a].tensor]];
    modes[a] = starpu_mode(acc[a].mode);
  }
  return nd_mpi_submit(nd__codelet(t->kind), bg->run_on[i], handles, modes, t->n_access, fill, &(fill_arg){ex, bg, i});
}

/* The calling thread's CPU time: what submitting cost it, without the time
 * it waited for a core the workers held. */
static double thread_cpu_s(void) {
  struct timespec ts;
  return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) ? 0.0 : (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int nd_exec_run(nd_exec *ex, int which, const nd_step *step, nd_error *err) {
  const bound_graph *bg = &ex->graphs[which];
  const nd_graph *g = bg->g;
  ex->step = *step;
  ex->submitted = ex->buffers = 0;
  double t0 = starpu_timing_now(), c0 = thread_cpu_s();
  for (int32_t i = 0; i < g->n_tasks; i++) {
    int32_t len = bg->chain_len ? bg->chain_len[i] : 1;
    if (len == 0) continue; /* run by its chain */
    /* several processes: a process takes part in a chain when it takes part
     * in one of its members (the chain's buffers are theirs) */
    int visit = ex->procs == 1;
    for (int32_t k = 0; k < len && !visit; k++) visit = bg->visit[i + k];
    if (!visit) continue;
    ex->submitted++;
    ex->buffers += len > 1 ? bg->chain[i].n_buf : g->tasks[i].n_access;
    int rc = ex->procs > 1 ? submit_mpi(ex, bg, i) : len > 1 ? submit_chain(ex, bg, i) : submit_local(ex, bg, i);
    if (rc) {
      nd_mpi_wait();
      return nd__fail(err, ND_ERUNTIME, "StarPU refused task %d (%s): error %d", i, nd_task_kind_name(g->tasks[i].kind),
                      rc);
    }
  }
  ex->submit_s = (starpu_timing_now() - t0) * 1e-6;
  ex->submit_cpu_s = thread_cpu_s() - c0;
  if (ex->procs > 1)
    nd_mpi_wait();
  else
    starpu_task_wait_for_all();
  /* StarPU keeps a device's buffers cached after their tasks: what a node
   * holds at the end of a step is what the step needed there */
  int64_t used = 0;
  for (unsigned node = 0; node < starpu_memory_nodes_get_count(); node++) {
    starpu_ssize_t total = starpu_memory_get_total(node);
    if (starpu_node_get_kind(node) != STARPU_CPU_RAM && total >= 0) used += total - starpu_memory_get_available(node);
  }
  if (used > ex->device_peak) ex->device_peak = used;
  return nd__kernel_failure(ex->kernels, err);
}

int64_t nd_exec_rank_bytes(const nd_exec *ex, int rank) { return ex->held[rank]; }
void nd_exec_submission(const nd_exec *ex, int64_t *tasks, double *seconds) {
  *tasks = ex->submitted;
  *seconds = ex->submit_s;
}
void nd_exec_submission_cost(const nd_exec *ex, double *cpu_seconds, int64_t *buffers) {
  *cpu_seconds = ex->submit_cpu_s;
  *buffers = ex->buffers;
}
int64_t nd_exec_device_peak(const nd_exec *ex) { return ex->device_peak; }

int nd_exec_procs(const nd_exec *ex, int *me) {
  if (me) *me = ex->me;
  return ex->procs;
}

int nd_exec_local(const nd_exec *ex, int32_t tensor) { return ex->procs == 1 || ex->proc[tensor] == ex->me; }

int64_t nd_exec_visited(const nd_exec *ex, int which) {
  const bound_graph *bg = &ex->graphs[which];
  int64_t n = 0;
  for (int32_t i = 0; i < bg->g->n_tasks; i++) n += ex->procs == 1 || bg->visit[i];
  return n;
}

void nd_exec_set_kernels(nd_exec *ex, nd_kernels *k) {
  ex->kernels = k;
  for (int i = 0; i < ex->n_graphs; i++)
    for (int32_t t = 0; t < ex->graphs[i].g->n_tasks; t++) ex->graphs[i].ctx[t].kernels = k;
}

int nd_exec_runs_on_device(const nd_exec *ex, int backend, const nd_task *t) {
  return nd__kernels_runs(ex ? ex->kernels : NULL, backend, t);
}

void *nd_exec_acquire(nd_exec *ex, int32_t tensor, int write) {
  starpu_data_handle_t h = ex->handles[tensor];
  if (ex->procs > 1 && !write) nd_mpi_fetch(h);
  starpu_data_acquire(h, write ? STARPU_RW : STARPU_R);
  return ex->procs > 1 ? (void *)starpu_data_get_local_ptr(h) : ex->ptr[tensor];
}

void nd_exec_release(nd_exec *ex, int32_t tensor) {
  starpu_data_release(ex->handles[tensor]);
  if (ex->procs > 1) nd_mpi_forget(ex->handles[tensor]);
}

double nd_exec_read_f64(nd_exec *ex, int32_t tensor) {
  double v = *(double *)nd_exec_acquire(ex, tensor, 0);
  nd_exec_release(ex, tensor);
  return v;
}

double nd_exec_read_loss(nd_exec *ex, const nd_graph *g) {
  double sum = 0.0;
  for (int d = 0; d < g->dp; d++) sum += nd_exec_read_f64(ex, g->loss[d]);
  return sum;
}

void nd_exec_free(nd_exec *ex) {
  if (!ex) return;
  free(ex->held);
  if (ex->observer.task_done) nd_exec_observe(ex, NULL);
  if (ex->handles)
    for (int32_t i = 0; i < ex->owner->n_tensors; i++)
      if (ex->handles[i]) starpu_data_unregister(ex->handles[i]);
  for (int i = 0; i < ex->n_graphs; i++) {
    free(ex->graphs[i].tensor);
    free(ex->graphs[i].ctx);
    free(ex->graphs[i].priority);
    free(ex->graphs[i].workers);
    free(ex->graphs[i].home);
    free(ex->graphs[i].visit);
    if (ex->graphs[i].coll)
      for (int32_t t = 0; t < ex->graphs[i].g->n_tasks; t++) free(ex->graphs[i].coll[t]);
    free(ex->graphs[i].coll);
    free(ex->graphs[i].run_on);
    nd__forward_free(&ex->graphs[i].forward);
    free_chains(&ex->graphs[i]);
  }
  if (ex->blocks)
    for (int b = 0; b < ex->n_blocks; b++) free(ex->blocks[b]);
  free(ex->blocks);
  free(ex->handles);
  free(ex->ptr);
  free(ex->by_name);
  free(ex->proc);
  free(ex->reader);
  free(ex);
}
