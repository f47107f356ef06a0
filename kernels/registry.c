/* The kernel table of a run: what backends and plugins register, what the
 * configuration selects, and the failures kernels report while tasks run. */
#include "kernels/registry.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/error.h"
#include "kernels/probe.h"

#define ND__MAX_IMPLS       8
#define ND__MAX_ACTIVATIONS 16

struct nd_kernels {
  nd__kernel_slot slot[ND_BACKEND_COUNT][ND_TASK_KIND_COUNT];
  nd_cost_fn cost[ND_TASK_KIND_COUNT]; /* the selected implementation's, NULL: graph/cost.c */
  void *cost_user[ND_TASK_KIND_COUNT];
  nd__kernel_impl impls[ND_TASK_KIND_COUNT][ND__MAX_IMPLS];
  int n_impls[ND_TASK_KIND_COUNT];
  nd__kernel_impl acts[ND__MAX_ACTIVATIONS];
  int n_acts;
  void *handles[ND_MAX_PLUGINS + 1];
  int n_handles;
  /* 0: no failure; 1: being written; 2: kind, device and code are set */
  atomic_int failed;
  int failed_kind, failed_dev, failed_rc;
};

static int activation_kind(int kind) { return nd_kind(kind)->activation; }

static void impl_builtin(nd__kernel_impl *im, const char *name, int kind, int kind2) {
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  snprintf(im->origin, sizeof im->origin, "builtin");
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (!ops) continue;
    im->fn[b] = ops->kernel[kind];
    im->impl[b] = ops->impl[kind];
    if (kind2 >= 0) im->fn2[b] = ops->kernel[kind2], im->impl2[b] = ops->impl[kind2];
  }
}

/* kind's slots on every backend from im (second: an activation's backward). */
static void slot_set(nd_kernels *k, int kind, const nd__kernel_impl *im, int second) {
  for (int b = 0; b < ND_BACKEND_COUNT; b++)
    k->slot[b][kind] = (nd__kernel_slot){second ? im->fn2[b] : im->fn[b], second ? im->impl2[b] : im->impl[b],
                                         im->user[b], im->name, im->origin};
  k->cost[kind] = second ? im->cost2 : im->cost;
  k->cost_user[kind] = im->user[ND_BACKEND_CPU];
}

nd_kernels *nd__kernels_new(void) {
  nd_kernels *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  for (int kind = 0; kind < ND_TASK_KIND_COUNT; kind++) {
    const nd_kind_row *row = nd_kind(kind);
    if (row->activation) continue;
    nd__kernel_impl im;
    impl_builtin(&im, "builtin", kind, -1);
    if (row->replaceable) {
      k->impls[kind][0] = im;
      k->n_impls[kind] = 1;
      slot_set(k, kind, &k->impls[kind][0], 0);
    } else {
      /* not replaceable: nothing else to choose from, the names are static */
      for (int b = 0; b < ND_BACKEND_COUNT; b++)
        k->slot[b][kind] = (nd__kernel_slot){im.fn[b], im.impl[b], NULL, "builtin", "builtin"};
    }
  }
  impl_builtin(&k->acts[0], "gelu", ND_TASK_ACT_FWD, ND_TASK_ACT_BWD);
  k->n_acts = 1;
  slot_set(k, ND_TASK_ACT_FWD, &k->acts[0], 0);
  slot_set(k, ND_TASK_ACT_BWD, &k->acts[0], 1);
  return k;
}

static nd_kernels *builtin_table;
static void builtin_once(void) { builtin_table = nd__kernels_new(); }

nd_kernels *nd__kernels_builtin(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, builtin_once);
  return builtin_table;
}

const nd__kernel_slot *nd__kernels_slot(const nd_kernels *k, int dev, enum nd_task_kind kind) {
  return &(k ? k : nd__kernels_builtin())->slot[dev][kind];
}

int nd__kernels_runs(const nd_kernels *k, int dev, const nd_task *t) {
  if ((unsigned)dev >= ND_BACKEND_COUNT) return 0;
  const nd__kernel_slot *s = nd__kernels_slot(k, dev, t->kind);
  const nd_backend_ops *ops = nd__backend(dev);
  return (s->fn || s->impl) && ops && (!ops->supports || ops->supports(t));
}

int nd__kernels_keep(nd_kernels *k, void *handle) {
  if (k->n_handles == ND_MAX_PLUGINS + 1) return -1;
  k->handles[k->n_handles++] = handle;
  return 0;
}

/* ------------------------------------------------------------ registration */

/* What the registry handed to one plugin's init knows. */
typedef struct loading {
  nd_kernels *k;
  const char *origin;
  int abi;         /* the version the plugin was given */
  char error[512]; /* the first problem, empty: none */
} loading;

static int refuse(loading *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(loading *ld, const char *fmt, ...) {
  if (ld->error[0]) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ld->error, sizeof ld->error, fmt, ap);
  va_end(ap);
  return -1;
}

/* Names go into config values and messages: short, printable, no spaces. */
static int bad_name(loading *ld, const char *what, const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n >= ND_NAME_MAX) return refuse(ld, "%s name '%s' must be 1 to %d bytes", what, name, ND_NAME_MAX - 1);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)name[i] <= ' ' || name[i] == ':' || name[i] == 127)
      return refuse(ld, "%s name '%s' has a space, a colon or a control character", what, name);
  return 0;
}

/* The entry of `name` in list: the one from this plugin (another backend of
 * it), or a new one; NULL (refused) for a duplicate or a full list. */
static nd__kernel_impl *entry(loading *ld, nd__kernel_impl *list, int *n, int max, const char *what, const char *name,
                              const char *kind, int backend) {
  for (int i = 0; i < *n; i++) {
    if (strcmp(list[i].name, name) != 0) continue;
    if (strcmp(list[i].origin, ld->origin) == 0 && !list[i].fn[backend]) return &list[i];
    if (kind)
      refuse(ld, "duplicate kernel name '%s' for %s (already from %s)", name, kind, list[i].origin);
    else
      refuse(ld, "duplicate activation name '%s' (already from %s)", name, list[i].origin);
    return NULL;
  }
  if (*n == max) {
    if (kind)
      refuse(ld, "too many kernels for %s (at most %d)", kind, max);
    else
      refuse(ld, "too many %ss (at most %d)", what, max);
    return NULL;
  }
  nd__kernel_impl *im = &list[(*n)++];
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  snprintf(im->origin, sizeof im->origin, "%s", ld->origin);
  return im;
}

static int backend_ok(loading *ld, const char *name, int backend) {
  /* version 1 has no stream to give a CUDA kernel: ignored, as it always was */
  if (backend == ND_BACKEND_CUDA && ld->abi < 2) return 0;
  if (backend < 0 || backend >= ND_BACKEND_COUNT || (ld->abi < 2 && backend == ND_BACKEND_OPENCL))
    return refuse(ld, "kernel '%s': unknown backend %d", name, backend);
  return 1;
}

/* The kinds whose tensors changed in ABI 3 (fused attention). */
static int attention_kind(int kind) {
  return kind == ND_TASK_ATTN_FWD || kind == ND_TASK_ATTN_BWD || kind == ND_TASK_GQA_FWD || kind == ND_TASK_GQA_BWD;
}

static int add_kernel(nd_kernel_registry *reg, const nd_kernel_def *def) {
  loading *ld = reg->ndgraph;
  nd_kernels *k = ld->k;
  if (!def || !def->kind || !def->name || !def->fn) return refuse(ld, "a kernel without a kind, a name or a function");
  int ok = backend_ok(ld, def->name, def->backend);
  if (ok <= 0) return ok;
  int kind = nd_task_kind_from_name(def->kind);
  if (kind < 0) return refuse(ld, "unknown task kind '%s' (kernel '%s')", def->kind, def->name);
  if (activation_kind(kind))
    return refuse(ld, "kernel '%s' for %s: activations are added with add_activation", def->name, def->kind);
  if (!nd_kind(kind)->replaceable) return refuse(ld, "task kind '%s' has no replaceable kernel", def->kind);
  if (ld->abi < 3 && attention_kind(kind))
    return refuse(ld,
                  "kernel '%s' for %s: built against ABI %d, whose attention kept the (T, T) probabilities; from ABI 3 "
                  "it keeps their log-sum-exp (B, NH, T) (rebuild it against this ndgraph/kernel.h)",
                  def->name, def->kind, ld->abi);
  if (bad_name(ld, "kernel", def->name)) return -1;
  nd__kernel_impl *im =
      entry(ld, k->impls[kind], &k->n_impls[kind], ND__MAX_IMPLS, "kernel", def->name, def->kind, def->backend);
  if (!im) return -1;
  im->fn[def->backend] = def->fn;
  im->user[def->backend] = def->user;
  if (def->cost) im->cost = def->cost;
  return 0;
}

static int add_activation_for(nd_kernel_registry *reg, const nd_activation_def *def, int backend) {
  loading *ld = reg->ndgraph;
  nd_kernels *k = ld->k;
  if (!def || !def->name || !def->forward || !def->backward)
    return refuse(ld, "an activation without a name, a forward or a backward");
  int ok = backend_ok(ld, def->name, backend);
  if (ok <= 0) return ok;
  if (bad_name(ld, "activation", def->name)) return -1;
  nd__kernel_impl *im = entry(ld, k->acts, &k->n_acts, ND__MAX_ACTIVATIONS, "activation", def->name, NULL, backend);
  if (!im) return -1;
  im->fn[backend] = def->forward;
  im->fn2[backend] = def->backward;
  im->user[backend] = def->user;
  if (def->forward_cost) im->cost = def->forward_cost;
  if (def->backward_cost) im->cost2 = def->backward_cost;
  return 0;
}

static int add_activation(nd_kernel_registry *reg, const nd_activation_def *def) {
  return add_activation_for(reg, def, ND_BACKEND_CPU);
}

static void set_error(nd_kernel_registry *reg, const char *msg) {
  if (msg) refuse(reg->ndgraph, "%s", msg);
}

int nd__kernels_run_init(nd_kernels *k, const char *origin, nd_plugin_init_fn init, nd_error *err) {
  loading ld = {k, origin, ND_KERNEL_ABI_VERSION, ""};
  nd_kernel_registry reg = {ND_KERNEL_ABI_VERSION, add_kernel, add_activation, set_error, &ld, add_activation_for};
  nd__probe_stage("%s: %s", origin, ND_PLUGIN_ENTRY);
  /* this version first, then the older ones, each registry without what came after it */
  int rc = ND_PLUGIN_EABI;
  for (int abi = ND_KERNEL_ABI_VERSION; abi >= 1 && rc == ND_PLUGIN_EABI && !ld.error[0]; abi--) {
    ld.abi = reg.abi_version = abi;
    reg.add_activation_for = abi >= 2 ? add_activation_for : NULL;
    rc = init(&reg, abi);
  }
  if (rc == ND_PLUGIN_EABI)
    return nd__fail(err, ND_EPLUGIN,
                    "%s: kernel ABI version mismatch: the plugin refuses ABI 1 to %d, the versions this ndgraph "
                    "loads (rebuild it against this ndgraph/kernel.h)",
                    origin, ND_KERNEL_ABI_VERSION);
  /* a refused registration says more than the code init returns after it */
  if (ld.error[0]) return nd__fail(err, ND_EPLUGIN, "%s: %s", origin, ld.error);
  if (rc) return nd__fail(err, ND_EPLUGIN, "%s: %s failed (returned %d)", origin, ND_PLUGIN_ENTRY, rc);
  return 0;
}

/* --------------------------------------------------------------- selection */

const nd__kernel_impl *nd__kernel_find(const nd_kernels *k, enum nd_task_kind kind, const char *name) {
  if ((unsigned)kind >= ND_TASK_KIND_COUNT) return NULL;
  for (int i = 0; i < k->n_impls[kind]; i++)
    if (strcmp(k->impls[kind][i].name, name) == 0) return &k->impls[kind][i];
  return NULL;
}

const nd__kernel_impl *nd__activation_find(const nd_kernels *k, const char *name) {
  for (int i = 0; i < k->n_acts; i++)
    if (strcmp(k->acts[i].name, name) == 0) return &k->acts[i];
  return NULL;
}

static void names(char *out, size_t size, const nd__kernel_impl *list, int n) {
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < n && len < size; i++)
    len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ", " : "", list[i].name);
}

/* Every task runs on a CPU worker when nothing else can take it. */
static int needs_cpu(const nd_config *cfg, const char *key, const nd__kernel_impl *im, nd_error *err) {
  if (im->fn[ND_BACKEND_CPU] || im->impl[ND_BACKEND_CPU]) return 0;
  return nd__fail(err, ND_ECONFIG, "%s: %s: '%s' (%s) has no CPU implementation", nd__config_origin(cfg, key), key,
                  im->name, im->origin);
}

int nd__kernels_select(nd_kernels *k, const nd_config *cfg, nd_error *err) {
  char avail[512];
  const char *from = nd__config_origin(cfg, "kernels.override");
  for (int64_t i = 0; i < cfg->kernels.n_overrides; i++) {
    const struct nd_kernel_override *o = &cfg->kernels.overrides[i];
    int kind = nd_task_kind_from_name(o->kind);
    if (kind < 0) return nd__fail(err, ND_ECONFIG, "%s: kernels.override: unknown task kind '%s'", from, o->kind);
    if (activation_kind(kind))
      return nd__fail(err, ND_ECONFIG, "%s: kernels.override: %s follows model.activation; set that instead", from,
                      o->kind);
    if (!nd_kind(kind)->replaceable)
      return nd__fail(err, ND_ECONFIG, "%s: kernels.override: task kind '%s' has no replaceable kernel", from, o->kind);
    const nd__kernel_impl *im = nd__kernel_find(k, kind, o->name);
    if (!im) {
      names(avail, sizeof avail, k->impls[kind], k->n_impls[kind]);
      return nd__fail(err, ND_ECONFIG, "%s: kernels.override: no kernel '%s' for %s (available: %s)", from, o->name,
                      o->kind, avail);
    }
    if (needs_cpu(cfg, "kernels.override", im, err)) return ND_ECONFIG;
    slot_set(k, kind, im, 0);
  }
  const nd__kernel_impl *act = nd__activation_find(k, cfg->model.activation);
  if (!act) {
    names(avail, sizeof avail, k->acts, k->n_acts);
    return nd__fail(err, ND_ECONFIG,
                    "%s: model.activation: unknown activation '%s' (available: %s; plugins add others)",
                    nd__config_origin(cfg, "model.activation"), cfg->model.activation, avail);
  }
  if (needs_cpu(cfg, "model.activation", act, err)) return ND_ECONFIG;
  slot_set(k, ND_TASK_ACT_FWD, act, 0);
  slot_set(k, ND_TASK_ACT_BWD, act, 1);
  return 0;
}

int nd__kernels_selected(const nd_kernels *k, enum nd_task_kind kind, const char **name, const char **origin) {
  const nd__kernel_slot *s = &k->slot[ND_BACKEND_CPU][kind];
  if (!nd_kind(kind)->replaceable) return 0;
  *name = s->name;
  *origin = s->origin;
  return 1;
}

/* A plugin's figure for one task of g: not negative, and small enough that
 * the step's sum of n tasks cannot overflow whatever the others are. */
static int cost_in_range(const nd_kernels *k, const nd_graph *g, const nd_task *t, int64_t v, const char *unit,
                         nd_error *err) {
  const nd__kernel_slot *s = &k->slot[ND_BACKEND_CPU][t->kind];
  if (v < 0)
    return nd__fail(err, ND_EPLUGIN,
                    "%s: kernel '%s' for %s: the cost model gives %lld %s for a task (0 or more expected)", s->origin,
                    s->name, nd_task_kind_name(t->kind), (long long)v, unit);
  if (v > INT64_MAX / g->n_tasks)
    return nd__fail(err, ND_EPLUGIN,
                    "%s: kernel '%s' for %s: the cost model's %s overflow the step's total (%lld for a task)",
                    s->origin, s->name, nd_task_kind_name(t->kind), unit, (long long)v);
  return 0;
}

int nd_kernels_apply_costs(const nd_kernels *k, nd_graph *g, nd_error *err) {
  for (int32_t i = 0; i < g->n_tasks; i++) {
    nd_task *t = &g->tasks[i];
    nd_cost_fn cost = k->cost[t->kind];
    if (!cost) continue;
    nd_tensor_desc d[ND_KIND_MAX_BUFFERS];
    nd_kernel_args a;
    int n = nd__kernel_layout(t, NULL, NULL, NULL, d, &a, NULL);
    a.user = k->cost_user[t->kind];
    int64_t flops = t->flops, bytes = t->bytes;
    cost(d, n, &a, &flops, &bytes);
    int rc = cost_in_range(k, g, t, flops, "FLOPs", err);
    if (rc || (rc = cost_in_range(k, g, t, bytes, "bytes", err))) return rc;
    t->flops = flops;
    t->bytes = bytes;
  }
  return 0;
}

/* ---------------------------------------------------------------- failures */

void nd__kernel_report(nd_kernels *k, enum nd_task_kind kind, int dev, int rc) {
  if (!k) k = nd__kernels_builtin();
  int expect = 0;
  if (!atomic_compare_exchange_strong(&k->failed, &expect, 1)) return;
  k->failed_kind = kind;
  k->failed_dev = dev;
  k->failed_rc = rc;
  atomic_store(&k->failed, 2);
}

int nd__kernel_failure(nd_kernels *k, nd_error *err) {
  if (!k) k = nd__kernels_builtin();
  if (atomic_load(&k->failed) != 2) return 0;
  const nd__kernel_slot *s = &k->slot[k->failed_dev][k->failed_kind];
  atomic_store(&k->failed, 0);
  if (k->failed_dev != ND_BACKEND_CPU && !s->fn)
    return nd__fail(err, ND_ERUNTIME, "%s backend: the built-in %s failed (error %d)", nd_device_name(k->failed_dev),
                    nd_task_kind_name(k->failed_kind), k->failed_rc);
  return nd__fail(err, ND_EPLUGIN, "%s: kernel '%s' for %s returned %d", s->origin, s->name,
                  nd_task_kind_name(k->failed_kind), k->failed_rc);
}

/* ------------------------------------------------------------------ output */

void nd__kernels_print(const nd_kernels *k, FILE *f) {
  fprintf(f, "\nkernels:\n");
  for (int kind = 0; kind < ND_TASK_KIND_COUNT; kind++) {
    const char *name, *origin;
    if (!nd__kernels_selected(k, kind, &name, &origin)) continue;
    if (strcmp(origin, "builtin") == 0)
      fprintf(f, "  %s: %s\n", nd_task_kind_name(kind), name);
    else
      fprintf(f, "  %s: %s (%s)\n", nd_task_kind_name(kind), name, origin);
  }
}

void nd_kernels_close(nd_kernels *k) {
  if (!k || k == builtin_table) return;
  for (int i = 0; i < k->n_handles; i++) dlclose(k->handles[i]);
  free(k);
}
