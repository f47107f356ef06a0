/* The registry of kernel implementations: what plugins add, what the
 * configuration selects, and the failures kernels report while tasks run. */
#include "kernels/registry.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

#include "common/error.h"

#define ND__MAX_IMPLS 8
#define ND__MAX_ACTIVATIONS 16

static nd__kernel_impl impls[ND_TASK_KIND_COUNT][ND__MAX_IMPLS];
static int n_impls[ND_TASK_KIND_COUNT];
static nd__kernel_impl acts[ND__MAX_ACTIVATIONS];
static int n_acts;

/* What the registry handed to one plugin's init knows. */
typedef struct loading {
  const char *origin;
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

static void impl_set(nd__kernel_impl *im, const char *name, const char *origin, nd_kernel_fn fn, nd_kernel_fn fn2,
                     nd_cost_fn cost, nd_cost_fn cost2, void *user) {
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  snprintf(im->origin, sizeof im->origin, "%s", origin);
  im->fn = fn;
  im->fn2 = fn2;
  im->cost = cost;
  im->cost2 = cost2;
  im->user = user;
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

static int add_kernel(nd_kernel_registry *reg, const nd_kernel_def *def) {
  loading *ld = reg->ndgraph;
  if (!def || !def->kind || !def->name || !def->fn) return refuse(ld, "a kernel without a kind, a name or a function");
  if (def->backend == ND_BACKEND_CUDA) return 0; /* no CUDA backend in this build: kept for later, not an error */
  if (def->backend != ND_BACKEND_CPU) return refuse(ld, "kernel '%s': unknown backend %d", def->name, def->backend);
  int kind = nd_task_kind_from_name(def->kind);
  if (kind < 0) return refuse(ld, "unknown task kind '%s' (kernel '%s')", def->kind, def->name);
  if (kind == ND_TASK_ACT_FWD || kind == ND_TASK_ACT_BWD)
    return refuse(ld, "kernel '%s' for %s: activations are added with add_activation", def->name, def->kind);
  if (!nd__kernel_replaceable(kind)) return refuse(ld, "task kind '%s' has no replaceable kernel", def->kind);
  if (bad_name(ld, "kernel", def->name)) return -1;
  for (int i = 0; i < n_impls[kind]; i++)
    if (strcmp(impls[kind][i].name, def->name) == 0)
      return refuse(ld, "duplicate kernel name '%s' for %s (already from %s)", def->name, def->kind,
                    impls[kind][i].origin);
  if (n_impls[kind] == ND__MAX_IMPLS) return refuse(ld, "too many kernels for %s (at most %d)", def->kind, ND__MAX_IMPLS);
  impl_set(&impls[kind][n_impls[kind]++], def->name, ld->origin, def->fn, NULL, def->cost, NULL, def->user);
  return 0;
}

static int add_activation(nd_kernel_registry *reg, const nd_activation_def *def) {
  loading *ld = reg->ndgraph;
  if (!def || !def->name || !def->forward || !def->backward)
    return refuse(ld, "an activation without a name, a forward or a backward");
  if (bad_name(ld, "activation", def->name)) return -1;
  for (int i = 0; i < n_acts; i++)
    if (strcmp(acts[i].name, def->name) == 0)
      return refuse(ld, "duplicate activation name '%s' (already from %s)", def->name, acts[i].origin);
  if (n_acts == ND__MAX_ACTIVATIONS) return refuse(ld, "too many activations (at most %d)", ND__MAX_ACTIVATIONS);
  impl_set(&acts[n_acts++], def->name, ld->origin, def->forward, def->backward, def->forward_cost,
           def->backward_cost, def->user);
  return 0;
}

static void set_error(nd_kernel_registry *reg, const char *msg) {
  if (msg) refuse(reg->ndgraph, "%s", msg);
}

int nd__kernels_run_init(const char *origin, nd_plugin_init_fn init, nd_error *err) {
  loading ld = {origin, ""};
  nd_kernel_registry reg = {ND_KERNEL_ABI_VERSION, add_kernel, add_activation, set_error, &ld};
  int rc = init(&reg, ND_KERNEL_ABI_VERSION);
  if (rc == ND_PLUGIN_EABI)
    return nd__fail(err, ND_EPLUGIN,
                    "%s: kernel ABI version mismatch: the plugin refuses ABI %d, the one of this ndgraph (rebuild it "
                    "against this ndgraph/kernel.h)",
                    origin, ND_KERNEL_ABI_VERSION);
  /* a refused registration says more than the code init returns after it */
  if (ld.error[0]) return nd__fail(err, ND_EPLUGIN, "%s: %s", origin, ld.error);
  if (rc) return nd__fail(err, ND_EPLUGIN, "%s: %s failed (returned %d)", origin, ND_PLUGIN_ENTRY, rc);
  return 0;
}

void nd__kernels_reset(void) {
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    n_impls[k] = 0;
    nd__kernels[k] = (nd__kernel_slot){nd__builtin_kernels[k], NULL, NULL, "builtin", "builtin"};
    if (nd__builtin_kernels[k] && k != ND_TASK_ACT_FWD && k != ND_TASK_ACT_BWD) {
      impl_set(&impls[k][0], "builtin", "builtin", nd__builtin_kernels[k], NULL, NULL, NULL, NULL);
      n_impls[k] = 1;
    }
  }
  impl_set(&acts[0], "gelu", "builtin", nd__builtin_kernels[ND_TASK_ACT_FWD], nd__builtin_kernels[ND_TASK_ACT_BWD],
           NULL, NULL, NULL);
  n_acts = 1;
  nd__kernels[ND_TASK_ACT_FWD].name = nd__kernels[ND_TASK_ACT_BWD].name = "gelu";
}

const nd__kernel_impl *nd__kernel_find(enum nd_task_kind kind, const char *name) {
  if ((unsigned)kind >= ND_TASK_KIND_COUNT) return NULL;
  for (int i = 0; i < n_impls[kind]; i++)
    if (strcmp(impls[kind][i].name, name) == 0) return &impls[kind][i];
  return NULL;
}

const nd__kernel_impl *nd__activation_find(const char *name) {
  for (int i = 0; i < n_acts; i++)
    if (strcmp(acts[i].name, name) == 0) return &acts[i];
  return NULL;
}

static void names(char *out, size_t size, const nd__kernel_impl *list, int n) {
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < n && len < size; i++) len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ", " : "", list[i].name);
}

static void slot_set(enum nd_task_kind kind, const nd__kernel_impl *im, nd_kernel_fn fn, nd_cost_fn cost) {
  nd__kernels[kind] = (nd__kernel_slot){fn, cost, im->user, im->name, im->origin};
}

int nd__kernels_select(const nd_config *cfg, nd_error *err) {
  char avail[512];
  for (int64_t i = 0; i < cfg->kernels.n_overrides; i++) {
    const struct nd_kernel_override *o = &cfg->kernels.overrides[i];
    int kind = nd_task_kind_from_name(o->kind);
    if (kind < 0) return nd__fail(err, ND_ECONFIG, "%s: kernels.override: unknown task kind '%s'", cfg->source, o->kind);
    if (kind == ND_TASK_ACT_FWD || kind == ND_TASK_ACT_BWD)
      return nd__fail(err, ND_ECONFIG, "%s: kernels.override: %s follows model.activation; set that instead",
                      cfg->source, o->kind);
    if (!nd__kernel_replaceable(kind))
      return nd__fail(err, ND_ECONFIG, "%s: kernels.override: task kind '%s' has no replaceable kernel", cfg->source,
                      o->kind);
    const nd__kernel_impl *im = nd__kernel_find(kind, o->name);
    if (!im) {
      names(avail, sizeof avail, impls[kind], n_impls[kind]);
      return nd__fail(err, ND_ECONFIG, "%s: kernels.override: no kernel '%s' for %s (available: %s)", cfg->source,
                      o->name, o->kind, avail);
    }
    slot_set(kind, im, im->fn, im->cost);
  }
  const nd__kernel_impl *act = nd__activation_find(cfg->model.activation);
  if (!act) {
    names(avail, sizeof avail, acts, n_acts);
    return nd__fail(err, ND_ECONFIG, "%s: model.activation: unknown activation '%s' (available: %s; plugins add others)",
                    cfg->source, cfg->model.activation, avail);
  }
  slot_set(ND_TASK_ACT_FWD, act, act->fn, act->cost);
  slot_set(ND_TASK_ACT_BWD, act, act->fn2, act->cost2);
  return 0;
}

void nd__kernel_cost(nd_task *t) {
  const nd__kernel_slot *s = &nd__kernels[t->kind];
  if (!s->cost) return;
  nd_tensor_desc d[ND__KERNEL_MAX_TENSORS];
  nd_kernel_args a;
  int n = nd__kernel_layout(t, NULL, d, &a, NULL);
  a.user = s->user;
  int64_t flops = t->flops, bytes = t->bytes;
  s->cost(d, n, &a, &flops, &bytes);
  t->flops = flops >= 0 ? flops : 0;
  t->bytes = bytes >= 0 ? bytes : 0;
}

/* 0: no failure; 1: being written; 2: kind and code are set. */
static atomic_int failed;
static int failed_kind, failed_rc;

void nd__kernel_report(enum nd_task_kind kind, int rc) {
  int expect = 0;
  if (!atomic_compare_exchange_strong(&failed, &expect, 1)) return;
  failed_kind = kind;
  failed_rc = rc;
  atomic_store(&failed, 2);
}

int nd__kernel_failure(nd_error *err) {
  if (atomic_load(&failed) != 2) return 0;
  const nd__kernel_slot *s = &nd__kernels[failed_kind];
  atomic_store(&failed, 0);
  return nd__fail(err, ND_EPLUGIN, "%s: kernel '%s' for %s returned %d", s->origin, s->name,
                  nd_task_kind_name(failed_kind), failed_rc);
}

void nd__kernels_print(FILE *f) {
  fprintf(f, "\nkernels:\n");
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    const nd__kernel_slot *s = &nd__kernels[k];
    if (!s->fn) continue;
    if (strcmp(s->origin, "builtin") == 0) fprintf(f, "  %s: %s\n", nd_task_kind_name(k), s->name);
    else fprintf(f, "  %s: %s (%s)\n", nd_task_kind_name(k), s->name, s->origin);
  }
}

void nd__kernels_line(FILE *f) {
  const char *sep = "kernels: ";
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    const nd__kernel_slot *s = &nd__kernels[k];
    if (!s->fn || strcmp(s->origin, "builtin") == 0) continue;
    fprintf(f, "%s%s=%s (%s)", sep, nd_task_kind_name(k), s->name, s->origin);
    sep = ", ";
  }
  if (sep[0] == ',') fputc('\n', f);
}

int nd__kernels_custom(void) {
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++)
    if (nd__kernels[k].fn && strcmp(nd__kernels[k].origin, "builtin") != 0) return 1;
  return 0;
}
