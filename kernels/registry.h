/* Internal: the table of kernel implementations per task kind (CPU backend),
 * filled with the built-ins, then with plugins; the IR's task kinds reach
 * their selected implementation through nd__kernels[kind]. No StarPU here. */
#ifndef ND_KERNELS_REGISTRY_H
#define ND_KERNELS_REGISTRY_H

#include <stdint.h>
#include <stdio.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "ndgraph/kernel.h"

#define ND__KERNEL_MAX_TENSORS 8

/* The implementation selected for a kind. fn NULL: the kind has no replaceable kernel. */
typedef struct nd__kernel_slot {
  nd_kernel_fn fn;
  nd_cost_fn cost; /* NULL: graph/cost.c */
  void *user;
  const char *name;   /* "builtin", "blocked", "gelu" */
  const char *origin; /* "builtin" or the plugin's path */
} nd__kernel_slot;

extern nd__kernel_slot nd__kernels[ND_TASK_KIND_COUNT];

/* What a kernel does with each of its tensors. */
enum nd__role { ND__IN, ND__OUT, ND__SCRATCH };

/* The descriptors of task t's tensors, in the kernel's order, from its
 * buffers in access order (ptrs NULL: shapes only, data NULL). Fills the
 * call's scalars and, when role is not NULL, each tensor's role. Returns the
 * number of descriptors, or 0 when the kind has no replaceable kernel. */
int nd__kernel_layout(const nd_task *t, void *const *ptrs, nd_tensor_desc *d, nd_kernel_args *a, uint8_t *role);
/* Whether kind has a replaceable kernel (activation kinds included). */
int nd__kernel_replaceable(enum nd_task_kind kind);

/* The built-in implementations, on descriptors. */
extern const nd_kernel_fn nd__builtin_kernels[ND_TASK_KIND_COUNT]; /* activation kinds: GeLU */

/* Resets the table to the built-ins, runs the static inits and loads
 * cfg's plugins, then selects kernels.override and model.activation, and
 * calls each selected plugin kernel once on small random inputs. Process-wide:
 * one configuration at a time. */
int nd_kernels_setup(const nd_config *cfg, nd_error *err);
/* Loads only `path` (after the static inits), for kernel-check. */
int nd_kernels_load_one(const char *path, nd_error *err);
/* Back to the built-ins; unloads the plugins. */
void nd_kernels_teardown(void);

/* Steps of nd_kernels_setup (kernels/registry.c). */
void nd__kernels_reset(void); /* the built-ins only */
/* Runs a plugin's init with a registry whose additions name origin. */
int nd__kernels_run_init(const char *origin, nd_plugin_init_fn init, nd_error *err);
/* kernels.override and model.activation. */
int nd__kernels_select(const nd_config *cfg, nd_error *err);

/* Finding registered implementations (for kernel-check). */
typedef struct nd__kernel_impl {
  char name[ND_NAME_MAX];
  char origin[ND_PATH_MAX];
  nd_kernel_fn fn, fn2; /* activations: forward, backward */
  nd_cost_fn cost, cost2;
  void *user;
} nd__kernel_impl;
/* Implementation `name` of kind (NULL when none). */
const nd__kernel_impl *nd__kernel_find(enum nd_task_kind kind, const char *name);
const nd__kernel_impl *nd__activation_find(const char *name);

/* A plugin's cost replaces the IR's flops (and bytes) of t. */
void nd__kernel_cost(nd_task *t);

/* A kernel's failure inside a task: the first is kept, and reported by
 * nd__kernel_failure (ND_EPLUGIN) once the tasks are done. */
void nd__kernel_report(enum nd_task_kind kind, int rc);
int nd__kernel_failure(nd_error *err);

/* The "kernels:" section of the plan: each replaceable kind and what runs it. */
void nd__kernels_print(FILE *f);
/* One line "kernels: KIND=NAME (PLUGIN), ..." of the plugin kernels in use; nothing when none. */
void nd__kernels_line(FILE *f);
/* Whether any selected implementation comes from a plugin. */
int nd__kernels_custom(void);

/* Runs implementation (fn, user) of kind on random inputs of several shapes
 * against the reference and prints one line per case to out (NULL: silent).
 * Activations (kind ACT_FWD) check forward values for finiteness and the
 * backward (fn2) against finite differences of the forward. Returns 0 when
 * every case passes, 1 when one does not, or a negative ND_E* code (a kernel
 * that returned non-zero: ND_EPLUGIN, with the message in err). quick: one
 * small case only (the validation call before training). */
int nd__kernel_check(enum nd_task_kind kind, const nd__kernel_impl *impl, int quick, FILE *out, nd_error *err);

#endif
