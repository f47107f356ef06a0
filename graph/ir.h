/* The task-graph IR of one training step: tensors and the tasks that read and
 * write them. It knows nothing of StarPU, so it can be printed, checked and
 * simulated. Dependencies are not stored: they follow from the tasks' accesses
 * taken in array order (the order is a sequential program, as StarPU reads a
 * submission), see nd_graph_edges. */
#ifndef ND_GRAPH_IR_H
#define ND_GRAPH_IR_H

#include <stdint.h>

#include "common/rope.h"
#include "configs/config.h"

/* A position in the device mesh: data-parallel replica, pipeline stage, tensor-parallel shard.
 * Context-parallel ranks are numbered inside the replica axis: dp = replica * cp + c. */
typedef struct nd_rank {
  int dp, pp, tp;
} nd_rank;

enum nd_tensor_kind {
  ND_TENSOR_PARAM,
  ND_TENSOR_GRAD,
  ND_TENSOR_OPTSTATE,
  ND_TENSOR_ACTIVATION,
  ND_TENSOR_INPUT, /* token ids of a micro-batch */
  ND_TENSOR_STAT,  /* step statistics: loss, gradient norm */
  ND_TENSOR_PARAM_COPY, /* train.precision bf16: a GEMM weight's bf16 copy, cast from it every step */
  ND_TENSOR_GATHERED,   /* data_parallel_shard parameters: a block's whole weight, gathered from the ranges before each use */
  ND_TENSOR_GRAD_BUF,   /* data_parallel_shard gradients: a whole gradient, accumulated, then reduce-scattered into ranges */
  ND_TENSOR_DP_CHUNK, /* a data-parallel group across processes: a chunk of a replica's gradient or parameter, or a bucket's flat copy (graph/dpchunk.h) */
  ND_TENSOR_KIND_COUNT
};

enum nd_dtype { ND_F32, ND_I32, ND_F64, ND_BF16 };
static inline int nd_dtype_size(enum nd_dtype d) { return d == ND_F64 ? 8 : d == ND_BF16 ? 2 : 4; }

/* How a parameter shard sits in the full (Hugging Face layout) tensor. */
enum nd_shard {
  ND_SHARD_FULL,     /* the whole tensor */
  ND_SHARD_COLS,     /* columns block tp of the last dimension */
  ND_SHARD_QKV_COLS, /* the last dimension is [q | k | v]; block tp of each */
  ND_SHARD_ROWS,     /* rows block tp of the first dimension */
  ND_SHARD_VOCAB     /* rows [v0, v0 + Vs) of the vocabulary, uneven blocks */
};

#define ND_TENSOR_NAME_MAX 80

typedef struct nd_tensor {
  char name[ND_TENSOR_NAME_MAX]; /* unique, e.g. "d0p1t0.h.3.attn.c_attn.weight" */
  enum nd_tensor_kind kind;
  enum nd_dtype dtype;
  int ndim;
  int64_t shape[4];
  int64_t bytes;
  nd_rank home;
  int layer; /* transformer block, -1 for none */
  int slot;  /* activation slot, -1 for state that lives across micro-batches */
  /* Parameters, their gradients and optimizer states: */
  char hf_name[48]; /* "h.3.attn.c_attn.weight" */
  enum nd_shard shard;
  int64_t full_shape[2]; /* shape of the whole Hugging Face tensor (ndim 1 or 2, like shape) */
  int64_t shard_begin;   /* ND_SHARD_VOCAB: first row */
  int primary;           /* 1 on the one copy that counts (gathers, gradient norm); replicas hold the same values */
  int decay;             /* AdamW applies weight decay (matrices and embeddings) */
  int32_t param;         /* gradients and optimizer states: index of their parameter, else -1 */
  /* A data-parallel shard (parallelism.data_parallel_shard), of shape (n) or
   * (n, 1): elements [dp_begin, dp_begin + n) of the rank's whole tensor (its
   * parameter's shape), which has dp_numel elements; dp_numel 0: whole. */
  int64_t dp_begin, dp_numel;
} nd_tensor;

enum nd_access_mode { ND_ACCESS_R = 1, ND_ACCESS_W = 2, ND_ACCESS_RW = 3 };

typedef struct nd_access {
  int32_t tensor;
  uint8_t mode;
} nd_access;

enum nd_phase {
  ND_PHASE_F,          /* forward */
  ND_PHASE_B,          /* input gradient */
  ND_PHASE_W,          /* weight gradient */
  ND_PHASE_COLLECTIVE, /* communication between ranks */
  ND_PHASE_OPTIMIZER,
  ND_PHASE_COUNT
};

/* The task kinds; each is described once, by its row in graph/kinds.c. */
#define ND_TASK_KINDS(X) \
  X(LOAD_BATCH)          \
  X(EMBED_FWD)           \
  X(EMBED_BWD)           \
  X(LN_FWD)              \
  X(LN_BWD_IN)           \
  X(LN_BWD_W)            \
  X(MATMUL_FWD)          \
  X(MATMUL_BWD_IN)       \
  X(MATMUL_BWD_W)        \
  X(ATTN_FWD)            \
  X(ATTN_BWD)            \
  X(ACT_FWD)             \
  X(ACT_BWD)             \
  X(RESIDUAL_FWD)        \
  X(CE_STATS)            \
  X(CE_COMBINE)          \
  X(CE_LSE)              \
  X(CE_BWD)              \
  X(ALLREDUCE)           \
  X(SENDRECV)            \
  X(GRAD_SUMSQ)          \
  X(ADAMW)               \
  X(RMSNORM_FWD)         \
  X(RMSNORM_BWD_IN)      \
  X(RMSNORM_BWD_W)       \
  X(ROPE_FWD)            \
  X(ROPE_BWD)            \
  X(SWIGLU_FWD)          \
  X(SWIGLU_BWD)          \
  X(GQA_FWD)             \
  X(GQA_BWD)             \
  X(KV_ATTN)             \
  X(KV_GQA)              \
  X(POS_ADD)             \
  X(CAST_BF16)          \
  X(ALLGATHER)           \
  X(SHARD_GATHER)        \
  X(REDUCE_SCATTER)      \
  X(GRAD_SUMSQ_RANGE)    \
  X(PARAM_GATHER)        \
  X(RING_ATTN_FWD)       \
  X(RING_ATTN_MERGE)     \
  X(RING_ATTN_BWD)       \
  X(RING_KV_ADD)         \
  X(RING_POS_FWD)        \
  X(RING_POS_BWD)        \
  X(RING_GQA_FWD)        \
  X(RING_GQA_BWD)        \
  X(RING_GQA_KV_ADD)     \
  X(RING_ROPE_FWD)       \
  X(RING_ROPE_BWD)

enum nd_task_kind {
#define ND__KIND_ENUM(k) ND_TASK_##k,
  ND_TASK_KINDS(ND__KIND_ENUM)
#undef ND__KIND_ENUM
      ND_TASK_KIND_COUNT
};

/* The ranks a collective spans. */
enum nd_group {
  ND_GROUP_NONE,    /* not a collective */
  ND_GROUP_TP,      /* (d, s, *) */
  ND_GROUP_DP,      /* (*, s, t) */
  ND_GROUP_PP_NEXT, /* (d, s, t) -> (d, s + 1, t) */
  ND_GROUP_PP_PREV, /* (d, s, t) -> (d, s - 1, t) */
  ND_GROUP_TIED,    /* (d, 0, t) and (d, last, t): the tied embedding */
  ND_GROUP_ALL,     /* every rank: the gradient norm */
};

/* Per-kind sizes; which member is used follows from the kind. */
struct nd_mm_args {
  int M, K, N, trans_w, has_bias;
  float beta;
}; /* linear layers */
struct nd_ln_args {
  int N, C, has_skip;
  float beta;
};
struct nd_attn_args {
  int B, T, NH, hs;
};
struct nd_gqa_args {
  int B, T, NH, hs, NKV;
}; /* begins as nd_attn_args; NKV key/value heads */
/* Generation (graph/generate.c): T new tokens at the submission's position
 * (nd_step.pos) attend over a key/value cache of `positions`; begins as
 * nd_gqa_args. RoPE at those positions where rotary (Llama). The position
 * rows' add (POS_ADD) reads T, positions and hs as the width C (NH 1). */
struct nd_cache_args {
  int B, T, NH, hs, NKV, positions, rotary;
  nd_rope rope;
};
/* Context parallelism (graph/ring.c): the sequence is 2 cp chunks, rank c
 * holding chunks c and 2 cp - 1 - c as its T tokens. A ring block is the
 * attention of rank qr's queries over rank kr's keys and values at their
 * true positions; begins as nd_gqa_args. */
struct nd_ring_args {
  int B, T, NH, hs, NKV, cp, qr, kr;
};
struct nd_rms_args {
  int N, C, has_skip;
  float beta, eps;
}; /* begins as nd_ln_args */
struct nd_rope_args {
  int64_t n;
  int B, T, H, hs;
  nd_rope rope;
}; /* n = B*T*H*hs, as nd_ew_args */
struct nd_ring_rope_args {
  struct nd_rope_args r;
  int cp, chunk; /* the positions of rank `chunk` of cp (RING_ROPE_*) */
};
struct nd_ew_args {
  int64_t n;
}; /* elementwise */
struct nd_send_args {
  int64_t n, offset;
}; /* begins as nd_ew_args: n elements of the source from `offset` (a slice) to the whole destination */
struct nd_emb_args {
  int B, T, C, v0, Vs, wpe;
  float beta;
  int cp, chunk; /* the ring's position rows (RING_POS_*): rank `chunk` of cp */
}; /* wpe: the position table (bwd: only it) */
struct nd_ce_args {
  int N, Vs, v0, nshards;
};
struct nd_coll_args {
  int64_t n;
  int nparts;
  enum nd_dtype dtype;
  int64_t chunk; /* shard_gather, reduce_scatter: shard c is elements [c * chunk, (c + 1) * chunk) (graph/shard.h) */
  int shards;    /* reduce-scatter: part p receives the sum of shard p % shards */
  int own;       /* shard_gather: the shard its destination updated itself (its sources are the others, in order) */
};
struct nd_adamw_args {
  int64_t n;
  int decay;
  int64_t offset; /* a data-parallel shard: the first element of param and grad it updates (m and v hold n) */
  int param_range; /* the parameter holds only the range (data_parallel_shard parameters): it starts at 0 */
  int grad_range;  /* the gradient holds only the range (data_parallel_shard gradients): it starts at 0 */
};
struct nd_load_args {
  int B, T, seq0, tokens, targets;
  int cp, chunk; /* cp > 1: the T tokens are rank `chunk`'s two chunks of each sequence */
}; /* seq0: first sequence in the global batch */
struct nd_sumsq_args {
  int nparts;
  int64_t n;
  /* grad_sumsq_range: shard `shard`'s range of each gradient, the lanes of
   * shard - 1's sums continued (graph/shard.h); `last` writes the total */
  int shard, last;
}; /* n: gradient elements summed */

/* Per-kind sizes; which member is used follows from the kind. */
typedef union nd_task_args {
  struct nd_mm_args mm;
  struct nd_ln_args ln;
  struct nd_rms_args rms;
  struct nd_rope_args rope;
  struct nd_attn_args attn;
  struct nd_gqa_args gqa;
  struct nd_ring_args ring;
  struct nd_ring_rope_args ring_rope;
  struct nd_cache_args cache;
  struct nd_ew_args ew;
  struct nd_send_args send;
  struct nd_emb_args emb;
  struct nd_ce_args ce;
  struct nd_coll_args coll;
  struct nd_adamw_args adamw;
  struct nd_load_args load;
  struct nd_sumsq_args sumsq;
} nd_task_args;

typedef struct nd_task {
  enum nd_task_kind kind;
  enum nd_phase phase;
  enum nd_group group;
  nd_rank rank;    /* where it runs (a collective: its first participant) */
  int micro_batch; /* -1 for per-step tasks */
  int layer;       /* -1 for none; n_layer for the head */
  int replica;     /* repeats the computation of another task (tensor-parallel LayerNorm, data-parallel updates) */
  int bf16;        /* train.precision bf16: a GEMM that rounds its inputs to bf16, or a task that writes bf16 */
  int64_t flops;
  int64_t bytes;                  /* bytes accessed */
  int64_t comm_bytes;             /* bytes that cross between ranks (collectives) */
  int32_t first_access, n_access; /* into nd_graph.access */
  nd_task_args a;
} nd_task;

/* Activation buffers come in pools by lifetime; a micro-batch uses slot
 * mb % pool_slots[pool] of each (nd_act_slot: the last one may have a FWD_W
 * slot of its own, fwd_w_tail). FWD_SCRATCH: read only within its forward;
 * FWD_B: read by the input gradient (B); FWD_W: read by the weight gradient
 * (W: a layer's input); GRAD_B: gradients read only within one B; GRAD_W:
 * gradients that W reads (a layer's output gradient). Separate pools let W
 * wait behind later forwards and input gradients (graph/gpt.c sizes them). */
enum nd_act_pool { ND_POOL_FWD_SCRATCH, ND_POOL_FWD_B, ND_POOL_FWD_W, ND_POOL_GRAD_B, ND_POOL_GRAD_W, ND_POOL_COUNT };

typedef struct nd_graph {
  /* the layout; slots bounds activation memory to that many micro-batches' worth;
   * dp counts replicas x context ranks (cp), T is one rank's tokens of a sequence */
  int dp, tp, pp, micro_batches, slots, cp;
  int pool_slots[ND_MAX_STAGES][ND_POOL_COUNT]; /* per stage */
  /* per stage, 1: the last micro-batch's FWD_W buffers are one more slot, so
   * that its forward waits for no W (graph/state.c) */
  int fwd_w_tail[ND_MAX_STAGES];
  int B, T, C, NH, L, V;
  int NKV, FF, tied; /* llama: key/value heads, MLP width, LM head tied to the embedding */
  int stage_first[ND_MAX_STAGES], stage_layers[ND_MAX_STAGES];
  int forward_only;
  /* a generation graph (nd_graph_build_generate): the key/value cache's
   * positions, and T is the tokens of one submission; 0 otherwise */
  int gen_cache;
  int split_tp; /* runtime.split_tensor_groups: under mpirun a tensor-parallel group may straddle processes */
  int bf16;     /* train.precision bf16: GEMM weights get bf16 copies, GEMM-only inputs are stored in bf16 */
  enum nd_dp_shard dp_shard; /* what the data-parallel group shards */
  int shard_size;            /* ranks of a shard group (dp when not sharded) */
  int procs;                 /* processes the step is cut across (nd_process_of); 1 without mpirun */

  nd_tensor *tensors;
  int32_t n_tensors, cap_tensors;
  nd_task *tasks;
  int32_t n_tasks, cap_tasks;
  nd_access *access;
  int32_t n_access, cap_access;

  /* statistics: loss[d] (1, f64) is replica d's share of the step's mean
   * loss, on (d, last, 0); normsq (1, f64) on every rank ends as the squared
   * global gradient norm */
  int32_t *loss;       /* [dp] */
  int32_t grad_normsq; /* rank (0, 0, 0)'s normsq, the one the trainer reads; -1: none */
} nd_graph;

/* The slot of `pool` that micro-batch mb uses on stage s. */
int nd_act_slot(const nd_graph *g, int s, enum nd_act_pool pool, int mb);

/* Builds the graph of one training step (or of one evaluation pass when
 * forward_only) from a validated configuration. */
int nd_graph_build(nd_graph **out, const nd_config *cfg, int forward_only, nd_error *err);
/* The training step (or evaluation pass when forward_only) cut across
 * `procs` processes (its data-parallel sums across processes go in chunks,
 * graph/dpchunk.h), with the forwards and backwards of some (replica,
 * stage) pairs only, those with pairs[d * pp + s] set (NULL: all): every
 * rank's state and the whole optimizer tail, and the built pairs' tasks in
 * the whole step's order. Enough for one process's share under mpirun
 * without building the step (tasks/mpi_plan.c picks the pairs,
 * docs/nodes.md). procs 1 and pairs NULL: nd_graph_build's graph. */
int nd_graph_build_pairs(nd_graph **out, const nd_config *cfg, int forward_only, const uint8_t *pairs, int procs,
                         nd_error *err);
/* The forward of n_tokens new tokens of one sequence for generation: one
 * pipeline of cfg's tensor split, every layer's keys and values kept in a
 * cache of model.seq_len positions, the logits of each new token; no loss.
 * Graphs of any n_tokens name the same parameters and caches. */
int nd_graph_build_generate(nd_graph **out, const nd_config *cfg, int n_tokens, nd_error *err);
void nd_graph_free(nd_graph *g);

const char *nd_task_kind_name(enum nd_task_kind kind); /* graph/kinds.c */
const char *nd_phase_name(enum nd_phase phase);        /* "F", "B", "W", "collective", "optimizer" */
const char *nd_tensor_kind_name(enum nd_tensor_kind kind);
int nd_task_kind_from_name(const char *name); /* -1 when unknown */

static inline const nd_access *nd_task_access(const nd_graph *g, const nd_task *t) {
  return g->access + t->first_access;
}
int nd_rank_index(const nd_graph *g, nd_rank r);
/* The units a launch of several processes deals out (docs/nodes.md): a
 * (replica, stage) group each, or a rank each under split_tp; a layout cuts
 * across at most this many processes. */
int nd_process_units(const nd_graph *g);
/* The process of rank r among `procs`: the mesh is cut into units, a
 * (replica, stage) pair's whole tensor-parallel group each (or, with
 * runtime.split_tensor_groups, each rank: a group may then straddle
 * processes), dealt to the processes in blocks, replica-major, so replicas
 * spread across processes first and pipeline neighbours land on the same
 * or the next process. Units are numbered replica, then stage, then shard. */
int nd_process_of(const nd_graph *g, nd_rank r, int procs);
int nd_process_unit_of(const nd_graph *g, nd_rank r);
/* Does the data-parallel group of stage st, tensor rank t span processes? */
int nd_dp_spans(const nd_graph *g, int st, int t, int procs);
/* The place of a tensor in checkpoint order: GPT-2's wte, wpe, h.0 ... h.L-1, ln_f;
 * Llama's embed_tokens, layers 0 ... L-1, norm, lm_head. */
int64_t nd_gpt_param_order(const char *hf_name); /* (dp, pp, tp) -> 0 .. dp*pp*tp - 1 */

/* Dependencies as StarPU derives them from the accesses in array order
 * (read after write, write after read, write after write), as CSR arrays:
 * the predecessors of task i are pred[pred_off[i] .. pred_off[i + 1]). */
typedef struct nd_edges {
  int32_t *pred_off, *pred;
  int32_t *succ_off, *succ;
  int64_t n_edges;
} nd_edges;
int nd_graph_edges(const nd_graph *g, nd_edges *out);
/* The dependencies that go through the tensors k with through[k] set: the
 * step's, where g holds every task that accesses those tensors. */
int nd_graph_edges_through(const nd_graph *g, const uint8_t *through, nd_edges *out);
/* The edges of n_tasks tasks from their predecessors (CSR: pred_off[n_tasks
 * + 1], pred), both malloc'ed and taken over, freed on failure too. */
int nd_edges_from_preds(nd_edges *out, int32_t n_tasks, int32_t *pred_off, int32_t *pred);
void nd_edges_free(nd_edges *e);

#endif
