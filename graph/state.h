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

/* A model's activations of one micro-batch slot: `count` of them, those
 * before `first_stage` once per layer, the rest once per stage. */
typedef struct nd__act_set {
  int count, first_stage;
  const char *const *names;
  const enum nd_act_pool *pool; /* by the last phase that reads it */
  /* Kind, dtype and shape of activation a on rank r; returns its bytes. */
  int64_t (*shape)(const nd_graph *g, nd_rank r, int a, nd_tensor *t);
  /* Whether rank r holds activation a (per layer: every layer of its stage). */
  int (*on_rank)(const nd_graph *g, nd_rank r, int a);
} nd__act_set;

struct nd__task_spec;

typedef struct nd__builder {
  nd_graph *g;
  const nd_config *cfg;
  const nd__act_set *acts;
  int nranks, nparams;
  int32_t *param, *grad, *mom, *vel; /* [rank][nparams], -1 where absent */
  int32_t *act;                      /* [rank][slot][L + 1][acts->count], created on first use */
  int max_slots;                     /* the deepest pool */
  int32_t *normsq;                   /* [rank]: (0, s, t) ranks only */
  int32_t *parts;                    /* [max(nranks, 2)]: a collective's buffers, while emitting it */
  uint8_t *written;                  /* [tensor]: written earlier in this step */
  struct nd__task_spec *deferred;    /* W tasks waiting to be appended, oldest first */
  int n_deferred, cap_deferred, defer_w;
  int oom;
  int bad_order; /* kind + 1 of a task whose accesses do not follow its row: a bug of a builder */
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
/* The vocabulary rows of tensor-parallel rank t. */
static inline int nd__vocab_begin(const nd_graph *g, int t) { return (int)((int64_t)g->V * t / g->tp); }
static inline int nd__vocab_size(const nd_graph *g, int t) { return nd__vocab_begin(g, t + 1) - nd__vocab_begin(g, t); }

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
/* Adds parameter p on rank r with its gradient and the two AdamW moments. */
void nd__add_param(nd__builder *b, nd_rank r, int p, const nd__param_spec *spec);
int32_t *nd__pslot(nd__builder *b, int32_t *table, nd_rank r, int p);
static inline int32_t nd__param(nd__builder *b, nd_rank r, int p) { return *nd__pslot(b, b->param, r, p); }
static inline int32_t nd__grad(nd__builder *b, nd_rank r, int p) { return *nd__pslot(b, b->grad, r, p); }
/* Activation `which` of micro-batch mb at `layer` (ignored past first_stage):
 * the buffer of its slot in its pool. */
int32_t nd__act(nd__builder *b, nd_rank r, int mb, int layer, int which);

#endif
