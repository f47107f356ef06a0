/* Internal: the kernel table of one run (a trainer's, a plan's, a
 * kernel-check's). It holds, per backend and task kind, the implementation
 * selected: the backends' built-ins (kernels/backend.h), then what plugins
 * register, chosen by kernels.override and model.activation. Tasks reach it
 * through their argument, so two tables in one process do not meet. No
 * StarPU here. */
#ifndef ND_KERNELS_REGISTRY_H
#define ND_KERNELS_REGISTRY_H

#include <stdint.h>
#include <stdio.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "kernels/backend.h"
#include "ndgraph/kernel.h"

/* What runs a kind on one backend: a kernel in the plugin signature, or a
 * built-in implementation (impl). Neither: the backend cannot run the kind. */
typedef struct nd__kernel_slot {
  nd_kernel_fn fn;
  nd_impl_fn impl;
  void *user;
  const char *name;   /* "builtin", "blocked", "gelu" */
  const char *origin; /* "builtin" or the plugin's path */
} nd__kernel_slot;

/* A registered implementation of a replaceable kind (or an activation: fn
 * forward, fn2 backward), with its function on each backend. */
typedef struct nd__kernel_impl {
  char name[ND_NAME_MAX];
  char origin[ND_PATH_MAX];
  nd_kernel_fn fn[ND_BACKEND_COUNT], fn2[ND_BACKEND_COUNT];
  nd_impl_fn impl[ND_BACKEND_COUNT], impl2[ND_BACKEND_COUNT]; /* the built-ins of backends without fn */
  void *user[ND_BACKEND_COUNT];
  nd_cost_fn cost, cost2;
} nd__kernel_impl;

typedef struct nd_kernels nd_kernels;

/* A table for cfg: the built-ins, the static inits, cfg's plugins, the
 * selection (kernels.override, model.activation), and one validation call
 * of each selected plugin kernel on small random inputs. */
int nd_kernels_open(nd_kernels **out, const nd_config *cfg, nd_error *err);
/* A table with only `path` loaded (after the static inits), for kernel-check. */
int nd_kernels_open_one(nd_kernels **out, const char *path, nd_error *err);
/* Unloads its plugins. NULL: nothing. */
void nd_kernels_close(nd_kernels *k);
/* The built-ins only, shared and never closed: what tasks without a table run. */
nd_kernels *nd__kernels_builtin(void);

/* What runs task kind `kind` on backend dev. */
const nd__kernel_slot *nd__kernels_slot(const nd_kernels *k, int dev, enum nd_task_kind kind);
/* Whether task t can run on backend dev: something is selected there and the backend takes t. */
int nd__kernels_runs(const nd_kernels *k, int dev, const nd_task *t);

/* Plugins' cost models replace the IR's flops (and bytes) of g's tasks
 * whose kernel they provide: run after building g, before planning it. A
 * negative figure, or one over INT64_MAX / tasks (the step's total could
 * overflow), is refused: ND_EPLUGIN naming the plugin and the kernel. */
int nd_kernels_apply_costs(const nd_kernels *k, nd_graph *g, nd_error *err);

/* Finding registered implementations (kernel-check, validation). NULL when none. */
const nd__kernel_impl *nd__kernel_find(const nd_kernels *k, enum nd_task_kind kind, const char *name);
const nd__kernel_impl *nd__activation_find(const nd_kernels *k, const char *name);

/* A kernel's failure inside a task: the first is kept, and reported by
 * nd__kernel_failure (ND_EPLUGIN) once the tasks are done. k NULL: the built-ins' table. */
void nd__kernel_report(nd_kernels *k, enum nd_task_kind kind, int dev, int rc);
int nd__kernel_failure(nd_kernels *k, nd_error *err);

/* The "kernels:" section of the plan: each replaceable kind and what runs it. */
void nd__kernels_print(const nd_kernels *k, FILE *f);
/* Each replaceable kind's selected implementation: name and origin, for plan's JSON. */
int nd__kernels_selected(const nd_kernels *k, enum nd_task_kind kind, const char **name, const char **origin);

/* Runs implementation impl of kind, on each backend it has a kernel for, on
 * random inputs of several shapes against the kind's double-precision
 * reference (kernels/reference.h; a kind without one is refused, ND_EINVAL)
 * and prints one line
 * per case to out (NULL: silent). Activations (kind ACT_FWD) check forward
 * values for finiteness and the backward against finite differences of the
 * forward. Returns 0 when every case passes, 1 when one does not, or a
 * negative ND_E* code (a kernel that returned non-zero: ND_EPLUGIN, with the
 * message in err). quick: the CPU and one small case only (the validation
 * call before training). */
int nd__kernel_check(enum nd_task_kind kind, const nd__kernel_impl *impl, int quick, FILE *out, nd_error *err);

/* Internal steps (kernels/registry.c, kernels/plugin.c). */
nd_kernels *nd__kernels_new(void);
/* Runs a plugin's init with a registry whose additions name origin (version ND_KERNEL_ABI_VERSION, then 1). */
int nd__kernels_run_init(nd_kernels *k, const char *origin, nd_plugin_init_fn init, nd_error *err);
int nd__kernels_select(nd_kernels *k, const nd_config *cfg, nd_error *err);
/* Keeps a plugin's dlopen handle for nd_kernels_close; -1 when full. */
int nd__kernels_keep(nd_kernels *k, void *handle);

#endif
