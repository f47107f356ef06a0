/* The one table of task kinds: for each kind its name, its buffers in order
 * (what the graph builder appends as accesses, what StarPU passes to the
 * codelet and what every backend's implementation receives as descriptors),
 * whether a plugin may replace its kernel, and its cost. No StarPU here:
 * graph/, kernels/, tasks/ and the documentation all read these rows. */
#ifndef ND_GRAPH_KINDS_H
#define ND_GRAPH_KINDS_H

#include <stddef.h>
#include <stdint.h>

#include "graph/ir.h"

/* What a kernel does with a buffer. */
enum nd_kind_role { ND_ROLE_IN, ND_ROLE_OUT };

/* When an optional buffer is there (absent: no access in the graph, an empty
 * descriptor with data NULL and ndim 0 for the kernel). */
enum nd_kind_presence {
  ND_ALWAYS,
  ND_IF_BIAS,    /* mm.has_bias */
  ND_IF_SKIP,    /* ln.has_skip */
  ND_IF_WPE,     /* emb.wpe */
  ND_IF_TOKENS,  /* load.tokens */
  ND_IF_TARGETS, /* load.targets */
  ND_IF_PREV,    /* sumsq.shard > 0: the previous shard's sums */
};

/* How many times a buffer repeats. */
enum nd_kind_repeat {
  ND_ONCE,
  ND_PER_PART,  /* coll.nparts */
  ND_PER_SHARD, /* ce.nshards */
  ND_REST,      /* every remaining access (a rank's gradients) */
};

/* The symbols of shape expressions, each read from the task's arguments. */
enum nd_dim {
  ND_D_1,
  ND_D_3,
  ND_D_M,
  ND_D_K,
  ND_D_N, /* linear layers: mm */
  ND_D_ROWS,
  ND_D_C, /* LayerNorm: ln.N, ln.C */
  ND_D_B,
  ND_D_T,
  ND_D_NH,
  ND_D_HS, /* attention */
  ND_D_KV, /* grouped-query attention: key/value heads */
  ND_D_n,  /* elementwise and collectives: ew.n, coll.n, adamw.n */
  ND_D_BT,
  ND_D_EC,
  ND_D_VS,
  ND_D_ET,
  ND_D_TABLE, /* embedding: B*T, C, Vs, T, Vs or T (the table a bwd writes) */
  ND_D_CN,
  ND_D_CVS, /* cross-entropy: ce.N, ce.Vs */
  ND_D_LBT, /* load_batch: B*T */
  ND_D_S,   /* generation: the key/value cache's positions */
  ND_D_PT,  /* context parallelism: the position table's rows, emb.T * emb.cp */
  ND_D_BUF, /* the buffer's own element count */
  ND_D_COUNT
};

/* A buffer's dtype; a f32 one that a GEMM reads, or that a kernel writes for
 * a GEMM, is bf16 under train.precision bf16 where the IR's tensor is
 * (kernels/layout.c gives the descriptor the tensor's dtype). */
enum nd_kind_dtype { ND_DT_F32, ND_DT_I32, ND_DT_F64, ND_DT_COLL /* coll.dtype */, ND_DT_BF16 };

#define ND_KIND_MAX_BUFFERS 9
#define ND_KIND_MAX_DIMS    5

typedef struct nd_kind_buffer {
  const char *name;
  uint8_t role;    /* enum nd_kind_role */
  uint8_t mode;    /* enum nd_access_mode; a gradient output is W, RW once accumulating */
  uint8_t dtype;   /* enum nd_kind_dtype */
  uint8_t present; /* enum nd_kind_presence */
  uint8_t repeat;  /* enum nd_kind_repeat */
  uint8_t weight;  /* a linear layer's (K, N) weight, stored (N, K) when mm.trans_w */
  uint8_t beta;    /* honours the call's beta (0 overwrite, 1 add) */
  uint8_t ndim;
  uint8_t dims[ND_KIND_MAX_DIMS]; /* enum nd_dim */
} nd_kind_buffer;

typedef struct nd_kind_row {
  const char *name; /* "matmul_fwd": config keys, plugins, traces */
  int replaceable;  /* a plugin may register an implementation */
  int activation;   /* follows model.activation rather than kernels.override */
  int n_buffers;
  nd_kind_buffer buf[ND_KIND_MAX_BUFFERS];
  int64_t (*flops)(const nd_task *t); /* graph/cost.c */
  /* The part of flops that repeats work counted elsewhere (attention's
   * backward computes the forward's scores again): not the model's
   * arithmetic (nd_plan_model_flops). NULL: none. */
  int64_t (*repeated)(const nd_task *t);
  float (*beta)(const nd_task *t); /* the call's beta; NULL: 0 */
  /* Replaceable kinds: the sizes kernel-check runs them at (the first is the
   * quick validation call before training). */
  const nd_task_args *samples;
  int n_samples;
} nd_kind_row;

const nd_kind_row *nd_kind(enum nd_task_kind kind);
/* The value of a shape symbol for task t. */
int64_t nd_kind_dim(const nd_task *t, enum nd_dim d);
const char *nd_kind_dim_name(enum nd_dim d);
/* Whether buffer b of t's kind is present, and how many times it repeats
 * (rest: the accesses that the buffers before it leave). */
int nd_kind_present(const nd_task *t, const nd_kind_buffer *b);
int nd_kind_count(const nd_task *t, const nd_kind_buffer *b, int rest);
/* One line describing kind's row for people: "matmul_fwd  out (M, N) out,
 * ...", the form docs/kernels.md lists (tests/test_kinds compares them). */
void nd_kind_describe(enum nd_task_kind kind, char *out, size_t size);
/* The sizes of task t for people: "M 7, K 5, N 3, trans_w 1, bias 0, beta 1". */
void nd_kind_sizes(const nd_task *t, char *out, size_t size);
/* Whether the accesses of t follow its row (count and modes). */
int nd_kind_check_access(const nd_task *t, const nd_access *acc, int n);

#endif
