/* Internal to graph/'s model builders: the builder's per-rank state tables.
 * Parameters come with their gradient and two AdamW moments, indexed by
 * (rank, parameter); activations live in pools by lifetime (ir.h), indexed
 * by (rank, slot, layer, activation), created on first use. A model builder
 * describes its activations once (nd__act_set) and the tables do the rest. */
#ifndef ND_GRAPH_STATE_H
#define ND_GRAPH_STATE_H

#include "common/error.h"
#include "configs/config.h"
#include "graph/builder.h"

/* How an activation's shape follows from the layout (B, T, C, heads and
 * vocabulary rows of a rank). */
enum nd__act_shape {
  ND__ACT_HIDDEN,   /* (B, T, C): the residual stream and what has its width */
  ND__ACT_ROW,      /* (B, T): a statistic per row */
  ND__ACT_TOKENS,   /* (B, T) int32: an input of the step */
  ND__ACT_SPLIT,    /* (B, T, mult * (width / tp)): split across the tensor ranks */
  ND__ACT_HEAD_ROW, /* (B, NH / tp, T): a statistic per head and row (the attention's log-sum-exp) */
  ND__ACT_LOGITS,   /* (B T, the rank's vocabulary rows) */
  ND__ACT_CE_STATS, /* (B T, 3): the cross-entropy statistics of a logits shard */
  ND__ACT_SLICE,    /* (the rank's share of B T C): its slice of a hidden activation (nd__slice_begin) */
};
/* The full width an ND__ACT_SPLIT activation is a share of. */
enum nd__act_width {
  ND__WIDTH_C,  /* n_embd (= query heads x head size) */
  ND__WIDTH_KV, /* key/value heads x head size */
  ND__WIDTH_FF, /* the MLP's intermediate width (Llama) */
};
/* Which ranks hold an activation, once per slot. */
enum nd__act_where {
  ND__AT_LAYER, /* every rank, once per layer of its stage: a family's rows */
  ND__AT_STAGE, /* every rank, once */
  ND__AT_FIRST, /* the first stage's ranks */
  ND__AT_LAST,  /* the last stage's ranks */
};

/* One activation: a row of a table. */
typedef struct nd__act_row {
  const char *name;
  enum nd_act_pool pool; /* by the last phase that reads it (ir.h) */
  uint8_t shape, where;  /* enum nd__act_shape, enum nd__act_where */
  uint8_t mult, width;   /* ND__ACT_SPLIT: mult * (enum nd__act_width / tp) */
  uint8_t gemm_in;       /* only GEMMs read it: stored in bf16 under train.precision bf16 */
  uint8_t layers_share;  /* one buffer for every layer: a transient the next use rewrites (the ring's blocks, made only under context parallelism) */
} nd__act_row;

/* The activations of a stage, the same in every family (graph/stage.c uses
 * them): the batch, the stage's input and the gradient it sends back, the
 * final norm, the head and the loss. Their index is a family's row count
 * plus these (nd__stage_act). */
enum nd__stage_act {
  ND__A_TOKENS,
  ND__A_TARGETS,
  ND__A_XIN,
  ND__A_D_XIN,
  ND__A_LNF,
  ND__A_LNF_MEAN, /* where the final norm keeps a mean (LayerNorm) */
  ND__A_LNF_RSTD,
  ND__A_LOGITS,
  ND__A_CE_STATS,
  ND__A_LSE,
  ND__A_D_LNF,
  ND__A_XIN_PART,    /* the slice of xin this rank receives (tp > 1) */
  ND__A_D_XOUT_PART, /* the slice of the next stage's d_xin this rank receives (tp > 1) */
  ND__STAGE_ACTS
};

/* A model family's activations of one micro-batch slot, once per layer:
 * `count` rows (ND__AT_LAYER), and which of them is a block's output. */
typedef struct nd__act_set {
  int count;
  const nd__act_row *rows;
  int xout, d_xout; /* a block's output and its gradient */
  int lnf_mean;     /* the final norm keeps its mean (LayerNorm) */
  int attn_saved;   /* what the attention's forward saves for its backward alone (train.recompute: attention) */
} nd__act_set;

struct nd__task_spec;

typedef struct nd__builder {
  nd_graph *g;
  const nd_config *cfg;
  const nd__act_set *acts;
  int nranks, nparams;
  int32_t *param, *grad, *mom, *vel; /* [rank][nparams], -1 where absent */
  int32_t *gsum;                     /* [rank][nparams]: the summed gradient AdamW reads (grad, or its range) */
  int32_t *store;                    /* [rank][nparams]: what keeps the parameter between steps (param, or its range) */
  int32_t **act;                     /* [rank] -> [slot][L + 1][acts->count + ND__STAGE_ACTS], created on first use */
  int max_slots;                     /* the deepest pool */
  int32_t *normsq;                   /* [rank]: (0, s, t) ranks only */
  int32_t *lanes;                    /* [rank]: data_parallel_shard gradients: the norm's sums handed along, else -1 */
  int32_t *parts;                    /* [max(nranks, 2)]: a collective's buffers, while emitting it */
  uint8_t *written;                  /* [tensor]: written earlier in this step */
  int32_t *bf16_copy;                /* train.precision bf16: [tensor] a GEMM weight's bf16 copy, created on first use */
  int32_t *chunk0;                   /* [state tensor]: its first chunk (graph/dpchunk.h), -1 before its first cut */
  int n_state;                       /* tensors before the first task: parameters, their state, statistics */
  struct nd__task_spec *deferred;    /* W tasks waiting to be appended, oldest first */
  int n_deferred, cap_deferred, defer_w;
  enum nd_recompute recompute; /* train.recompute (none for an evaluation pass) */
  int recomputing;             /* emitting a forward again for the backward: nd__recompute_begin */
  int oom;
  int bad_order; /* kind + 1 of a task whose accesses do not follow its row: a bug of a builder */
  int bad_bf16;  /* kind + 1 of a task given a bf16 tensor it has no bf16 kernel for: a bug of a builder */
} nd__builder;

/* One parameter of a rank: its Hugging Face name, how it is split across
 * tensor-parallel ranks, its local and full shapes (ndim 1: shape[1] 0),
 * whether this copy is the primary one (checkpointed, in the norm), whether
 * AdamW decays it, where its shard begins and its layer (-1: none). */
typedef struct nd__param_spec {
  const char *hf;
  enum nd_shard shard;
  int ndim;
  int64_t shape[2], full[2];
  int primary, decay;
  int64_t shard_begin;
  int layer;
} nd__param_spec;

static inline nd_rank nd__rank(int d, int s, int t) { return (nd_rank){d, s, t}; }
/* The ranks of replica d's stage st a family's loops visit: its context
 * ranks (graph/ring.c) times its tensor ranks, i in [0, nd__group_size). */
static inline int nd__group_size(const nd_graph *g) { return g->cp * g->tp; }
static inline nd_rank nd__group_rank(const nd_graph *g, int d, int st, int i) {
  return nd__rank(d * g->cp + i / g->tp, st, i % g->tp);
}
/* The vocabulary rows of tensor-parallel rank t. */
static inline int nd__vocab_begin(const nd_graph *g, int t) { return (int)((int64_t)g->V * t / g->tp); }
static inline int nd__vocab_size(const nd_graph *g, int t) { return nd__vocab_begin(g, t + 1) - nd__vocab_begin(g, t); }
/* Where tensor-parallel rank t's slice of a (B, T, C) activation begins, in
 * elements: B T C split in tp contiguous parts, uneven where it does not divide. */
static inline int64_t nd__slice_begin(const nd_graph *g, int t) { return (int64_t)g->B * g->T * g->C * t / g->tp; }

/* The layout of cfg into g: sizes, ranks, stages. */
int nd__set_layout(nd_graph *g, const nd_config *cfg, nd_error *err);
/* Sizes the pools of every stage within `activation_slots`, then allocates
 * the tables of nparams parameters per rank and the per-rank norm scalars
 * and losses. 0 or ND_ENOMEM. */
int nd__builder_init(nd__builder *b, nd_graph *g, const nd__act_set *acts, int nparams);
void nd__builder_free(nd__builder *b);
/* The loss of each replica and the squared gradient norm of each rank. */
void nd__add_stats(nd__builder *b);

int32_t nd__add_tensor(nd__builder *b, nd_tensor *t);
/* The weight a GEMM of rank r reads for parameter tensor w: w itself, or
 * under train.precision bf16 its bf16 copy, made (with the task that casts
 * it, before the step's first use) the first time it is asked for. */
int32_t nd__gemm_weight(nd__builder *b, int mb, int32_t w);
/* Adds parameter p on rank r with its gradient and the two AdamW moments. */
void nd__add_param(nd__builder *b, nd_rank r, int p, const nd__param_spec *spec);
int32_t *nd__pslot(nd__builder *b, int32_t *table, nd_rank r, int p);
/* The weight the step's tasks read (under data_parallel_shard parameters a
 * block's gathered buffer, graph/gather.h) and the tensor that keeps it
 * between uses and that AdamW updates (the parameter or its range). */
static inline int32_t nd__param(nd__builder *b, nd_rank r, int p) { return *nd__pslot(b, b->param, r, p); }
static inline int32_t nd__param_store(nd__builder *b, nd_rank r, int p) { return *nd__pslot(b, b->store, r, p); }
/* The gradient the step's tasks accumulate (under data_parallel_shard
 * gradients a buffer, graph/gradbuf.h) and the one the optimizer reads, summed
 * over the replicas (the gradient or its range). */
static inline int32_t nd__grad(nd__builder *b, nd_rank r, int p) { return *nd__pslot(b, b->grad, r, p); }
static inline int32_t nd__grad_sum(nd__builder *b, nd_rank r, int p) { return *nd__pslot(b, b->gsum, r, p); }
/* Activation `which` of micro-batch mb at `layer` (ignored for a stage's
 * activations): the buffer of its slot in its pool. Under train.recompute
 * the activations recomputed before the backward have one buffer per slot
 * that every layer of the stage uses in turn (nd__act_shared). */
int32_t nd__act(nd__builder *b, nd_rank r, int mb, int layer, int which);
static inline int32_t nd__stage_act(nd__builder *b, nd_rank r, int mb, enum nd__stage_act which) {
  return nd__act(b, r, mb, -1, b->acts->count + (int)which);
}
/* The input of layer l of stage st (the stage's input or the layer before's
 * output), and where its gradient goes. */
int32_t nd__layer_input(nd__builder *b, nd_rank r, int mb, int l);
/* Is a family's activation `which` one buffer for all layers (its values
 * live from a forward, or recomputation, to the same layer's backward)? */
int nd__act_shared(const nd__builder *b, int which);
int32_t nd__layer_input_grad(nd__builder *b, nd_rank r, int mb, int l);

#endif
