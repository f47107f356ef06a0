/* ndgraph kernel plugins: replace the kernel of a task kind, or add an
 * activation function, from a shared object loaded at run time, for the CPU
 * and for OpenCL devices.
 *
 * A plugin exports one function,
 *
 *   int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version);
 *
 * which checks abi_version (return ND_PLUGIN_EABI when it is not
 * ND_KERNEL_ABI_VERSION) and registers its kernels through reg. ndgraph
 * offers its version first, then 1: a plugin built against version 1 loads
 * unchanged (it sees no OpenCL and none of the fields marked "version 2"). It needs no
 * other header and no link against libndgraph: everything goes through the
 * function pointers of the registry. Kernels see tensors as plain descriptors;
 * the order and shapes of each kind's tensors are listed below.
 *
 * A kernel returns 0, or non-zero to report a failure: ndgraph stops with one
 * line naming the plugin, the kernel and the code. */
#ifndef NDGRAPH_KERNEL_H
#define NDGRAPH_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "ndgraph/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change of the structures or signatures below, or of a
 * kind's tensors. Version 2: ND_BACKEND_OPENCL, nd_kernel_args.queue and
 * .device, nd_kernel_registry.add_activation_for. Version 3: the attention
 * kinds keep the log-sum-exp (B, NH, T) of each row, not the (T, T)
 * probabilities (docs/kernels.md). */
#ifndef ND_KERNEL_ABI_VERSION
#define ND_KERNEL_ABI_VERSION 3
#endif

/* The name of the entry point, for dlsym. */
#define ND_PLUGIN_ENTRY "ndgraph_plugin_init"
/* What ndgraph_plugin_init returns when abi_version is not its own. */
#define ND_PLUGIN_EABI  (-1000)

#define ND_KERNEL_MAX_DIMS 6

/* ND_KERNEL_BF16 (bfloat16, 2 bytes) reaches only ndgraph's own kernels,
 * under train.precision bf16, which runs no plugin kernel. */
enum nd_kernel_dtype { ND_KERNEL_F32, ND_KERNEL_I32, ND_KERNEL_F64, ND_KERNEL_BF16 };
/* Where an implementation runs. On ND_BACKEND_OPENCL a descriptor's data is
 * a cl_mem (the whole buffer, offset 0) and nd_kernel_args.queue the
 * cl_command_queue of the calling worker's device; the kernel returns when
 * its work on that queue is done (clFinish). On ND_BACKEND_CUDA (version 2;
 * ignored from version 1 plugins) a descriptor's data is a device pointer,
 * nd_kernel_args.queue the calling worker's cudaStream_t and .device its
 * CUDA device (the current one); the kernel enqueues its work on that stream
 * and may return before it ends: ndgraph waits for the stream.
 * ndgraph's one list of device kinds: placement units and the simulator's
 * workers carry it too. Plugins are built against these numbers: a new kind
 * goes at the end, before ND_BACKEND_COUNT, and none is ever renumbered. */
enum nd_kernel_backend { ND_BACKEND_CPU, ND_BACKEND_CUDA, ND_BACKEND_OPENCL, ND_BACKEND_COUNT };

/* A tensor as a kernel sees it. Element (i0, i1, ...) is at
 * data + sum(ik * strides[k]) elements (on OpenCL: that offset in the cl_mem). An optional tensor that is absent has
 * data NULL and ndim 0. */
typedef struct nd_tensor_desc {
  void *data;
  int dtype; /* enum nd_kernel_dtype */
  int ndim;
  int64_t shape[ND_KERNEL_MAX_DIMS];
  int64_t strides[ND_KERNEL_MAX_DIMS]; /* in elements */
} nd_tensor_desc;

/* The scalars of a call. */
typedef struct nd_kernel_args {
  const char *kind; /* the IR task kind, "matmul_fwd" */
  float beta;       /* outputs marked "beta" below: 0 overwrite, 1 add to what is there */
  void *user;       /* the pointer given at registration */
  void *queue; /* version 2: the device queue (cl_command_queue on OpenCL, cudaStream_t on CUDA); NULL on the CPU */
  int device;  /* version 2: the device number within its backend */
} nd_kernel_args;

/* A kernel: t[0 .. n) in the kind's order below. Returns 0 or an error code. */
typedef int (*nd_kernel_fn)(const nd_tensor_desc *t, int n, const nd_kernel_args *a);
/* A cost model: the same descriptors with data NULL. Sets *flops (and *bytes
 * when the plugin knows better than the sum of the tensors' sizes; leave it
 * otherwise). Used by priorities, the plan and performance figures. */
typedef void (*nd_cost_fn)(const nd_tensor_desc *t, int n, const nd_kernel_args *a, int64_t *flops, int64_t *bytes);

/* The tensors of each replaceable kind come in the order of its row in
 * ndgraph's kind table (graph/kinds.c), listed in docs/kernels.md, e.g.
 *
 *   matmul_fwd  out (M, N) out, inp (M, K), weight (K, N), bias (N) opt
 *
 * ("out" is written, "beta" honours a->beta, "opt" may be absent: data NULL, ndim 0).
 *
 * A weight may be stored transposed (the tied LM head): its strides say so,
 * (N, 1) for row-major (K, N) and (1, K) for a stored (N, K). Every other
 * tensor is row-major and contiguous.
 *
 * An activation's kernels (1-d, n elements):
 *   forward            out (n), inp (n)
 *   backward           dinp (n) out, inp (n), dout (n)        [dinp = f'(inp) * dout] */

typedef struct nd_kernel_def {
  const char *kind; /* "matmul_fwd" */
  const char *name; /* this implementation, selected by kernels.override: {KIND: NAME};
                       register it once per backend under the same name */
  int backend;      /* enum nd_kernel_backend */
  nd_kernel_fn fn;
  nd_cost_fn cost; /* NULL: ndgraph's own */
  void *user;
} nd_kernel_def;

typedef struct nd_activation_def {
  const char *name; /* selected by model.activation: NAME */
  nd_kernel_fn forward, backward;
  nd_cost_fn forward_cost, backward_cost; /* NULL: ndgraph's own */
  void *user;
} nd_activation_def;

typedef struct nd_kernel_registry nd_kernel_registry;
struct nd_kernel_registry {
  int abi_version;
  /* Each returns 0, or non-zero (and ndgraph refuses the plugin) for an
   * unknown kind, a duplicate name or a missing function. Names are copied. */
  int (*add_kernel)(nd_kernel_registry *reg, const nd_kernel_def *def);
  int (*add_activation)(nd_kernel_registry *reg, const nd_activation_def *def);
  /* A one-line reason the plugin gives before returning non-zero from init. */
  void (*set_error)(nd_kernel_registry *reg, const char *msg);
  void *ndgraph; /* ndgraph's own state */
  /* Version 2: an activation's kernels for a backend (enum nd_kernel_backend);
   * add_activation is this for ND_BACKEND_CPU. Register the same name once per backend. */
  int (*add_activation_for)(nd_kernel_registry *reg, const nd_activation_def *def, int backend);
};

typedef int (*nd_plugin_init_fn)(nd_kernel_registry *reg, int abi_version);

/* For programs that link libndgraph: an init function that runs as if it
 * were a plugin named label, on every (re)load of the kernels, before the
 * configuration's plugins. Returns 0, or -1 when the table (16) is full. */
ND_EXPORT int nd_kernels_add_static(const char *label, nd_plugin_init_fn init);
ND_EXPORT void nd_kernels_clear_static(void);

#ifdef __cplusplus
}
#endif
#endif
