/* Builds the IR of one GPT-2 training step for a data x tensor x pipeline layout.
 *
 * Tensor parallelism is Megatron's: attention split by heads, the MLP's first
 * matrix by columns and its second by rows, an all-reduce after each
 * row-parallel product (forward) and after each column-parallel input gradient
 * (backward); LayerNorms and residual adds are repeated on every tensor rank.
 * The embedding and the tied LM head are split by vocabulary rows, with a
 * vocabulary-parallel cross-entropy. Activation buffers come in pools by
 * lifetime (ir.h), reused every few micro-batches within the bound
 * `activation_slots`, so a forward waits for the tasks that free its slots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "graph/builder.h"
#include "graph/kinds.h"

/* Parameters of a rank, by their place in the model. */
enum { P_WTE, P_WPE, P_LNF_W, P_LNF_B, P_LAYER0 };
enum {
  L_LN1_W, L_LN1_B, L_QKV_W, L_QKV_B, L_ATTPROJ_W, L_ATTPROJ_B,
  L_LN2_W, L_LN2_B, L_FC_W, L_FC_B, L_MLPPROJ_W, L_MLPPROJ_B, L_NPARAMS
};
static const char *const layer_param_names[L_NPARAMS] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
    "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};

/* Activations of a micro-batch slot: per layer, then per stage (layer index L). */
enum act {
  A_LN1, A_LN1_MEAN, A_LN1_RSTD, A_QKV, A_ATT, A_ATTY, A_ATTPROJ, A_RES2,
  A_LN2, A_LN2_MEAN, A_LN2_RSTD, A_FCH, A_FCH_ACT, A_FCPROJ, A_XOUT,
  A_D_XOUT, A_D_RES2, A_D_FCH_ACT, A_D_FCH, A_D_LN2, A_D_ATTY, A_D_QKV, A_D_ATT, A_D_LN1,
  A_TOKENS, A_TARGETS, A_XIN, A_D_XIN, A_LNF, A_LNF_MEAN, A_LNF_RSTD, A_LOGITS,
  A_CE_STATS, A_LSE, A_D_LNF, A_COUNT
};
static const char *const act_names[A_COUNT] = {
    "ln1", "ln1_mean", "ln1_rstd", "qkv", "att", "atty", "attproj", "res2",
    "ln2", "ln2_mean", "ln2_rstd", "fch", "fch_act", "fcproj", "xout",
    "d_xout", "d_res2", "d_fch_act", "d_fch", "d_ln2", "d_atty", "d_qkv", "d_att", "d_ln1",
    "tokens", "targets", "xin", "d_xin", "lnf", "lnf_mean", "lnf_rstd", "logits",
    "ce_stats", "lse", "d_lnf"};

typedef struct builder {
  nd_graph *g;
  int nranks, nparams;
  int32_t *param, *grad, *mom, *vel; /* [rank][nparams], -1 where absent */
  int32_t *act;                      /* [rank][slot][L + 1][A_COUNT], created on first use */
  int max_slots;                     /* the deepest pool */
  int32_t *normsq;                   /* [rank]: (0, s, t) ranks only */
  int32_t *parts;                    /* [max(nranks, 2)]: a collective's buffers, while emitting it */
  uint8_t *written;                  /* [tensor]: written earlier in this step */
  struct task_spec *deferred;        /* W tasks waiting to be appended, oldest first */
  int n_deferred, cap_deferred, defer_w;
  int oom;
  int bad_order; /* kind + 1 of a task whose accesses do not follow its row: a bug of this file */
} builder;

static int vocab_begin(const nd_graph *g, int t) { return (int)((int64_t)g->V * t / g->tp); }
static int vocab_size(const nd_graph *g, int t) { return vocab_begin(g, t + 1) - vocab_begin(g, t); }

static nd_rank R(int d, int s, int t) { return (nd_rank){d, s, t}; }

static int32_t add_tensor(builder *b, nd_tensor *t) {
  t->bytes = t->dtype == ND_F64 ? 8 : 4;
  for (int i = 0; i < t->ndim; i++) t->bytes *= t->shape[i];
  int32_t id = nd__graph_add_tensor(b->g, t);
  if (id < 0) b->oom = 1;
  return id;
}

/* ------------------------------------------------------------ parameters */

static int32_t *pslot(builder *b, int32_t *table, nd_rank r, int p) {
  return &table[nd_rank_index(b->g, r) * b->nparams + p];
}

/* Adds parameter p on rank r with its gradient and the two AdamW moments. */
static void add_param(builder *b, nd_rank r, int p, const char *hf, enum nd_shard shard, int ndim,
                      int64_t d0, int64_t d1, int64_t full0, int64_t full1, int primary, int decay,
                      int64_t shard_begin, int layer) {
  static const char *const suffix[] = {"", ".grad", ".m", ".v"};
  static const enum nd_tensor_kind kinds[] = {ND_TENSOR_PARAM, ND_TENSOR_GRAD, ND_TENSOR_OPTSTATE,
                                              ND_TENSOR_OPTSTATE};
  int32_t *tables[] = {b->param, b->grad, b->mom, b->vel};
  int32_t param_id = -1;
  for (int k = 0; k < 4; k++) {
    nd_tensor t = {0};
    snprintf(t.name, sizeof t.name, "d%dp%dt%d.%s%s", r.dp, r.pp, r.tp, hf, suffix[k]);
    snprintf(t.hf_name, sizeof t.hf_name, "%s", hf);
    t.kind = kinds[k];
    t.dtype = ND_F32;
    t.ndim = ndim;
    t.shape[0] = d0;
    t.shape[1] = d1;
    t.full_shape[0] = full0;
    t.full_shape[1] = full1;
    t.home = r;
    t.layer = layer;
    t.slot = -1;
    t.shard = shard;
    t.shard_begin = shard_begin;
    t.primary = primary;
    t.decay = decay;
    t.param = param_id;
    int32_t id = add_tensor(b, &t);
    if (k == 0) param_id = id;
    *pslot(b, tables[k], r, p) = id;
  }
}

static void add_rank_params(builder *b, nd_rank r) {
  nd_graph *g = b->g;
  int C = g->C, tp = g->tp, Cs = C / tp, H4s = 4 * C / tp, t = r.tp;
  int first = r.pp == 0, last = r.pp == g->pp - 1;
  int main_copy = r.dp == 0; /* data-parallel replicas hold the same values */
  char hf[48];
  if (first || last) {
    /* the tied embedding: on the last stage of a pipeline it is a copy */
    add_param(b, r, P_WTE, "wte.weight", ND_SHARD_VOCAB, 2, vocab_size(g, t), C, g->V, C,
              main_copy && first, 1, vocab_begin(g, t), -1);
  }
  if (first && t == 0)
    add_param(b, r, P_WPE, "wpe.weight", ND_SHARD_FULL, 2, g->T, C, g->T, C, main_copy, 1, 0, -1);
  if (last) {
    add_param(b, r, P_LNF_W, "ln_f.weight", ND_SHARD_FULL, 1, C, 0, C, 0, main_copy && t == 0, 0, 0, -1);
    add_param(b, r, P_LNF_B, "ln_f.bias", ND_SHARD_FULL, 1, C, 0, C, 0, main_copy && t == 0, 0, 0, -1);
  }
  for (int l = g->stage_first[r.pp]; l < g->stage_first[r.pp] + g->stage_layers[r.pp]; l++) {
    int base = P_LAYER0 + L_NPARAMS * l;
    for (int j = 0; j < L_NPARAMS; j++) {
      snprintf(hf, sizeof hf, "h.%d.%s", l, layer_param_names[j]);
      int is_ln = j == L_LN1_W || j == L_LN1_B || j == L_LN2_W || j == L_LN2_B;
      int row_bias = j == L_ATTPROJ_B || j == L_MLPPROJ_B;
      if (row_bias && t != 0) continue; /* added once, after the row-parallel sum */
      switch (j) {
      case L_QKV_W: add_param(b, r, base + j, hf, ND_SHARD_QKV_COLS, 2, C, 3 * Cs, C, 3 * C, main_copy, 1, 0, l); break;
      case L_QKV_B: add_param(b, r, base + j, hf, ND_SHARD_QKV_COLS, 1, 3 * Cs, 0, 3 * C, 0, main_copy, 0, 0, l); break;
      case L_ATTPROJ_W: add_param(b, r, base + j, hf, ND_SHARD_ROWS, 2, Cs, C, C, C, main_copy, 1, 0, l); break;
      case L_FC_W: add_param(b, r, base + j, hf, ND_SHARD_COLS, 2, C, H4s, C, 4 * C, main_copy, 1, 0, l); break;
      case L_FC_B: add_param(b, r, base + j, hf, ND_SHARD_COLS, 1, H4s, 0, 4 * C, 0, main_copy, 0, 0, l); break;
      case L_MLPPROJ_W: add_param(b, r, base + j, hf, ND_SHARD_ROWS, 2, H4s, C, 4 * C, C, main_copy, 1, 0, l); break;
      default: /* LayerNorms and the row-parallel biases: whole vectors */
        add_param(b, r, base + j, hf, ND_SHARD_FULL, 1, C, 0, C, 0, main_copy && (!is_ln || t == 0), 0, 0, l);
      }
    }
  }
}

static int32_t P(builder *b, nd_rank r, int p) { return *pslot(b, b->param, r, p); }
static int32_t G(builder *b, nd_rank r, int p) { return *pslot(b, b->grad, r, p); }
static int LP(int l, int j) { return P_LAYER0 + L_NPARAMS * l + j; }

/* ------------------------------------------------------------ activations */

/* The pool of each activation, by the last phase that needs it (see ir.h). */
static const enum nd_act_pool act_pool[A_COUNT] = {
    [A_LN1] = ND_POOL_FWD_W, [A_LN1_MEAN] = ND_POOL_FWD_W, [A_LN1_RSTD] = ND_POOL_FWD_W,
    [A_QKV] = ND_POOL_FWD_B, [A_ATT] = ND_POOL_FWD_B, [A_ATTY] = ND_POOL_FWD_W,
    [A_ATTPROJ] = ND_POOL_FWD_SCRATCH, [A_RES2] = ND_POOL_FWD_W, [A_LN2] = ND_POOL_FWD_W,
    [A_LN2_MEAN] = ND_POOL_FWD_W, [A_LN2_RSTD] = ND_POOL_FWD_W, [A_FCH] = ND_POOL_FWD_B,
    [A_FCH_ACT] = ND_POOL_FWD_W, [A_FCPROJ] = ND_POOL_FWD_SCRATCH, [A_XOUT] = ND_POOL_FWD_W,
    [A_D_XOUT] = ND_POOL_GRAD_W, [A_D_RES2] = ND_POOL_GRAD_W, [A_D_FCH_ACT] = ND_POOL_GRAD_B,
    [A_D_FCH] = ND_POOL_GRAD_W, [A_D_LN2] = ND_POOL_GRAD_W, [A_D_ATTY] = ND_POOL_GRAD_B,
    [A_D_QKV] = ND_POOL_GRAD_W, [A_D_ATT] = ND_POOL_GRAD_B, [A_D_LN1] = ND_POOL_GRAD_W,
    [A_TOKENS] = ND_POOL_FWD_W, [A_TARGETS] = ND_POOL_FWD_B, [A_XIN] = ND_POOL_FWD_W,
    [A_D_XIN] = ND_POOL_GRAD_W, [A_LNF] = ND_POOL_FWD_W, [A_LNF_MEAN] = ND_POOL_FWD_W,
    [A_LNF_RSTD] = ND_POOL_FWD_W, [A_LOGITS] = ND_POOL_FWD_W, [A_CE_STATS] = ND_POOL_FWD_SCRATCH,
    [A_LSE] = ND_POOL_FWD_B, [A_D_LNF] = ND_POOL_GRAD_W};

/* Shape of an activation of rank r; returns its bytes. */
static int64_t act_shape(const nd_graph *g, nd_rank r, enum act which, nd_tensor *t) {
  int64_t B = g->B, T = g->T, C = g->C, Cs = C / g->tp, NHs = g->NH / g->tp;
  t->kind = ND_TENSOR_ACTIVATION;
  t->dtype = ND_F32;
  int64_t s3[4] = {B, T, C, 0};
  switch (which) {
  case A_LN1_MEAN: case A_LN1_RSTD: case A_LN2_MEAN: case A_LN2_RSTD:
  case A_LNF_MEAN: case A_LNF_RSTD: case A_LSE:
    s3[2] = 0; break;
  case A_TOKENS: case A_TARGETS:
    s3[2] = 0; t->kind = ND_TENSOR_INPUT; t->dtype = ND_I32; break;
  case A_QKV: case A_D_QKV: s3[2] = 3 * Cs; break;
  case A_ATTY: case A_D_ATTY: s3[2] = Cs; break;
  case A_FCH: case A_FCH_ACT: case A_D_FCH: case A_D_FCH_ACT: s3[2] = 4 * Cs; break;
  case A_ATT: case A_D_ATT: s3[1] = NHs; s3[2] = T; s3[3] = T; break;
  case A_LOGITS: s3[0] = B * T; s3[1] = vocab_size(g, r.tp); s3[2] = 0; break;
  case A_CE_STATS: s3[0] = B * T; s3[1] = 3; s3[2] = 0; break;
  default: break;
  }
  int64_t bytes = 4;
  t->ndim = 0;
  while (t->ndim < 4 && s3[t->ndim]) bytes *= s3[t->ndim], t->shape[t->ndim] = s3[t->ndim], t->ndim++;
  return bytes;
}

/* The activation `which` of micro-batch mb: the buffer of its slot in its pool. */
static int32_t A(builder *b, nd_rank r, int mb, int layer, enum act which) {
  nd_graph *g = b->g;
  int at_stage = which >= A_TOKENS;
  int li = at_stage ? g->L : layer, slot = mb % g->pool_slots[r.pp][act_pool[which]];
  int64_t idx = (((int64_t)nd_rank_index(g, r) * b->max_slots + slot) * (g->L + 1) + li) * A_COUNT + which;
  if (b->act[idx] >= 0) return b->act[idx];

  nd_tensor t = {0};
  act_shape(g, r, which, &t);
  t.home = r;
  t.layer = at_stage ? -1 : layer;
  t.slot = slot;
  t.param = -1;
  if (at_stage)
    snprintf(t.name, sizeof t.name, "d%dp%dt%d.s%d.%s", r.dp, r.pp, r.tp, slot, act_names[which]);
  else
    snprintf(t.name, sizeof t.name, "d%dp%dt%d.s%d.h%d.%s", r.dp, r.pp, r.tp, slot, layer, act_names[which]);
  return b->act[idx] = add_tensor(b, &t);
}

/* Does rank r hold activation `which` (per layer: every layer of its stage)? */
static int act_on_rank(const nd_graph *g, nd_rank r, enum act which) {
  int first = r.pp == 0, last = r.pp == g->pp - 1;
  switch (which) {
  case A_TOKENS: return first;
  case A_XIN: case A_D_XIN: return 1;
  case A_TARGETS: case A_LNF: case A_LNF_MEAN: case A_LNF_RSTD: case A_LOGITS: case A_CE_STATS: case A_LSE:
  case A_D_LNF: return last;
  default: return which < A_TOKENS;
  }
}

/* Do stage st's pools fit within the bound with `fwd` forwards in flight and
 * W tasks `wgrad - 1` micro-batches behind their B (every tensor-parallel rank)? */
static int pools_fit(const nd_graph *g, int st, int fwd, int wgrad) {
  int depth[ND_POOL_COUNT] = {[ND_POOL_FWD_SCRATCH] = 1, [ND_POOL_FWD_B] = fwd, [ND_POOL_FWD_W] = fwd + wgrad - 1,
                              [ND_POOL_GRAD_B] = 1, [ND_POOL_GRAD_W] = wgrad};
  if (fwd > g->micro_batches || wgrad > g->micro_batches) return 0;
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = {0, st, t};
    int64_t one = 0, used = 0;
    for (int a = 0; a < A_COUNT; a++) {
      if (!act_on_rank(g, r, (enum act)a)) continue;
      nd_tensor x = {0};
      int64_t bytes = act_shape(g, r, (enum act)a, &x) * (a < A_TOKENS ? g->stage_layers[st] : 1);
      one += bytes;
      used += bytes * depth[act_pool[a]];
    }
    if (used > (int64_t)g->slots * one) return 0;
  }
  return 1;
}

/* Pool depths. The bound is `activation_slots` micro-batches of every
 * activation of a rank. Scratch pools (read within one forward or one input
 * gradient) need one slot; `fwd` forwards in flight need fwd slots of what B
 * reads; W may run wgrad - 1 micro-batches after its B, so what W reads needs
 * wgrad slots of gradients and fwd + wgrad - 1 of forward data. From 1F1B's
 * (slots, 1), depth is added to fwd (on every stage: the program order of B
 * needs one fwd) and to each stage's wgrad in turn while they fit: the memory
 * that the scratch pools save buys forwards in flight and W tasks that wait. */
static void size_pools(nd_graph *g) {
  int fwd = g->slots < g->micro_batches ? g->slots : g->micro_batches, wgrad[ND_MAX_STAGES];
  for (int s = 0; s < g->pp; s++) wgrad[s] = 1;
  for (int grew = 1; grew;) {
    grew = 1;
    for (int s = 0; s < g->pp && grew; s++) grew = pools_fit(g, s, fwd + 1, wgrad[s]);
    fwd += grew;
    for (int s = 0; s < g->pp; s++)
      if (pools_fit(g, s, fwd, wgrad[s] + 1)) wgrad[s]++, grew = 1;
  }
  for (int s = 0; s < g->pp; s++) {
    int *d = g->pool_slots[s];
    d[ND_POOL_FWD_SCRATCH] = d[ND_POOL_GRAD_B] = 1;
    d[ND_POOL_FWD_B] = fwd;
    d[ND_POOL_FWD_W] = fwd + wgrad[s] - 1;
    d[ND_POOL_GRAD_W] = wgrad[s];
  }
}

/* ------------------------------------------------------------ tasks */

/* A task being built. Its accesses live in `fixed` until they outgrow it (a
 * collective over many ranks, a stage's gradient norm): then on the heap,
 * freed by emit. */
typedef struct task_spec {
  nd_task t;
  nd_access fixed[64], *acc;
  int n, cap, oom;
} task_spec;

static void spec_init(task_spec *s, enum nd_task_kind kind, enum nd_phase phase, nd_rank r, int mb, int layer) {
  memset(&s->t, 0, sizeof s->t);
  s->t.kind = kind;
  s->t.phase = phase;
  s->t.group = ND_GROUP_NONE;
  s->t.rank = r;
  s->t.micro_batch = mb;
  s->t.layer = layer;
  s->n = 0;
  s->acc = s->fixed;
  s->cap = (int)(sizeof s->fixed / sizeof s->fixed[0]);
  s->oom = 0;
}

static void acc(task_spec *s, int32_t tensor, int mode) {
  if (s->n == s->cap) {
    nd_access *grown = s->acc == s->fixed ? malloc(2 * (size_t)s->cap * sizeof *grown)
                                          : realloc(s->acc, 2 * (size_t)s->cap * sizeof *grown);
    if (!grown) {
      s->oom = 1;
      return;
    }
    if (s->acc == s->fixed) memcpy(grown, s->fixed, sizeof s->fixed);
    s->acc = grown;
    s->cap *= 2;
  }
  s->acc[s->n++] = (nd_access){tensor, (uint8_t)mode};
}

/* A gradient output: W the first time in the step (beta 0), RW after (beta 1). */
static float gacc(builder *b, task_spec *s, int32_t tensor) {
  float beta = b->written[tensor] ? 1.0f : 0.0f;
  acc(s, tensor, b->written[tensor] ? ND_ACCESS_RW : ND_ACCESS_W);
  b->written[tensor] = 1;
  return beta;
}

static void emit(builder *b, task_spec *s) {
  s->t.flops = nd__task_flops(&s->t);
  /* the buffers in the order of the kind's row (graph/kinds.c): kernels read them so */
  if (s->oom) {
    b->oom = 1;
    free(s->acc);
    return;
  }
  if (!nd_kind_check_access(&s->t, s->acc, s->n)) b->bad_order = s->t.kind + 1;
  if (b->defer_w && s->t.phase == ND_PHASE_W) {
    /* appended later by flush_w, in the same order among W tasks, so every
     * gradient is accumulated in the same order */
    if (b->n_deferred == b->cap_deferred) {
      int cap = b->cap_deferred ? 2 * b->cap_deferred : 64;
      task_spec *more = realloc(b->deferred, (size_t)cap * sizeof *more);
      if (!more) {
        b->oom = 1;
        if (s->acc != s->fixed) free(s->acc);
        return;
      }
      b->deferred = more, b->cap_deferred = cap;
    }
    task_spec *d = &b->deferred[b->n_deferred++];
    *d = *s;
    /* the copy moves (realloc, compaction): accesses kept in `fixed` are
     * found there (acc NULL), not through a pointer into the original */
    if (s->acc == s->fixed) d->acc = NULL;
    return;
  }
  if (nd__graph_add_task(b->g, &s->t, s->acc, s->n) < 0) b->oom = 1;
  if (s->acc != s->fixed) free(s->acc);
}

/* Appends stage st's deferred W tasks of micro-batches up to `mb`, in order. */
static void flush_w(builder *b, int st, int mb) {
  int kept = 0;
  for (int k = 0; k < b->n_deferred; k++) {
    task_spec *s = &b->deferred[k];
    if (s->t.rank.pp == st && s->t.micro_batch <= mb) {
      if (nd__graph_add_task(b->g, &s->t, s->acc ? s->acc : s->fixed, s->n) < 0) b->oom = 1;
      free(s->acc); /* NULL when the accesses were in `fixed` */
    } else if (kept++ != k) {
      b->deferred[kept - 1] = *s;
    }
  }
  b->n_deferred = kept;
}

/* The all-reduce of a group's buffers, in place: every part ends as the sum.
 * A group of one needs none. */
static void allreduce(builder *b, enum nd_group group, const int32_t *parts, int n, int mb, int layer) {
  if (n < 2) return;
  nd_graph *g = b->g;
  const nd_tensor *t0 = &g->tensors[parts[0]];
  task_spec s;
  spec_init(&s, ND_TASK_ALLREDUCE, ND_PHASE_COLLECTIVE, t0->home, mb, layer);
  s.t.group = group;
  s.t.a.coll.nparts = n;
  s.t.a.coll.n = t0->bytes / (t0->dtype == ND_F64 ? 8 : 4);
  s.t.a.coll.dtype = t0->dtype;
  s.t.comm_bytes = 2LL * (n - 1) * t0->bytes;
  for (int i = 0; i < n; i++) acc(&s, parts[i], ND_ACCESS_RW);
  emit(b, &s);
}

/* All-reduce of one activation across the tensor-parallel group of (d, s). */
static void allreduce_tp(builder *b, int d, int st, int layer, enum act which, int mb) {
  int32_t *parts = b->parts;
  for (int t = 0; t < b->g->tp; t++) parts[t] = A(b, R(d, st, t), mb, layer, which);
  allreduce(b, ND_GROUP_TP, parts, b->g->tp, mb, layer);
}

static void sendrecv(builder *b, enum nd_group group, int32_t src, int32_t dst, int mb, int layer) {
  task_spec s;
  spec_init(&s, ND_TASK_SENDRECV, ND_PHASE_COLLECTIVE, b->g->tensors[src].home, mb, layer);
  s.t.group = group;
  s.t.a.ew.n = b->g->tensors[src].bytes / 4;
  s.t.comm_bytes = b->g->tensors[src].bytes;
  acc(&s, src, ND_ACCESS_R);
  acc(&s, dst, ND_ACCESS_W);
  emit(b, &s);
}

static void matmul_fwd(builder *b, nd_rank r, int mb, int layer, int32_t out, int32_t in, int32_t w,
                       int32_t bias, int M, int K, int N, int trans_w) {
  task_spec s;
  spec_init(&s, ND_TASK_MATMUL_FWD, ND_PHASE_F, r, mb, layer);
  s.t.a.mm = (struct nd_mm_args){M, K, N, trans_w, bias >= 0, 0.0f};
  acc(&s, out, ND_ACCESS_W);
  acc(&s, in, ND_ACCESS_R);
  acc(&s, w, ND_ACCESS_R);
  if (bias >= 0) acc(&s, bias, ND_ACCESS_R);
  emit(b, &s);
}

/* The two halves of a linear layer's backward: B (input gradient) and W (weight gradient). */
static void matmul_bwd(builder *b, nd_rank r, int mb, int layer, int32_t dinp, int32_t dout,
                       int32_t inp, int32_t w, int32_t dw, int32_t dbias, int M, int K, int N,
                       int trans_w) {
  task_spec s;
  if (dinp >= 0) {
    spec_init(&s, ND_TASK_MATMUL_BWD_IN, ND_PHASE_B, r, mb, layer);
    s.t.a.mm = (struct nd_mm_args){M, K, N, trans_w, 0, 0.0f};
    acc(&s, dinp, ND_ACCESS_W);
    acc(&s, dout, ND_ACCESS_R);
    acc(&s, w, ND_ACCESS_R);
    emit(b, &s);
  }
  spec_init(&s, ND_TASK_MATMUL_BWD_W, ND_PHASE_W, r, mb, layer);
  float beta = gacc(b, &s, dw);
  if (dbias >= 0) gacc(b, &s, dbias); /* always written together with dw: same beta */
  acc(&s, dout, ND_ACCESS_R);
  acc(&s, inp, ND_ACCESS_R);
  s.t.a.mm = (struct nd_mm_args){M, K, N, trans_w, dbias >= 0, beta};
  emit(b, &s);
}

static void ln_fwd(builder *b, nd_rank r, int mb, int layer, int32_t out, int32_t mean, int32_t rstd,
                   int32_t in, int32_t w, int32_t bias) {
  task_spec s;
  spec_init(&s, ND_TASK_LN_FWD, ND_PHASE_F, r, mb, layer);
  s.t.replica = r.tp > 0;
  s.t.a.ln = (struct nd_ln_args){b->g->B * b->g->T, b->g->C, 0, 0.0f};
  acc(&s, out, ND_ACCESS_W);
  acc(&s, mean, ND_ACCESS_W);
  acc(&s, rstd, ND_ACCESS_W);
  acc(&s, in, ND_ACCESS_R);
  acc(&s, w, ND_ACCESS_R);
  acc(&s, bias, ND_ACCESS_R);
  emit(b, &s);
}

/* dinp = dskip + LN'(dout); then the weight gradient. dskip < 0: none. */
static void ln_bwd(builder *b, nd_rank r, int mb, int layer, int32_t dinp, int32_t dskip, int32_t dout,
                   int32_t in, int32_t w, int32_t mean, int32_t rstd, int32_t dw, int32_t dbias) {
  task_spec s;
  int N = b->g->B * b->g->T, C = b->g->C;
  spec_init(&s, ND_TASK_LN_BWD_IN, ND_PHASE_B, r, mb, layer);
  s.t.replica = r.tp > 0;
  s.t.a.ln = (struct nd_ln_args){N, C, dskip >= 0, 0.0f};
  acc(&s, dinp, ND_ACCESS_W);
  if (dskip >= 0) acc(&s, dskip, ND_ACCESS_R);
  acc(&s, dout, ND_ACCESS_R);
  acc(&s, in, ND_ACCESS_R);
  acc(&s, w, ND_ACCESS_R);
  acc(&s, mean, ND_ACCESS_R);
  acc(&s, rstd, ND_ACCESS_R);
  emit(b, &s);

  spec_init(&s, ND_TASK_LN_BWD_W, ND_PHASE_W, r, mb, layer);
  s.t.replica = r.tp > 0;
  float beta = gacc(b, &s, dw);
  gacc(b, &s, dbias);
  acc(&s, dout, ND_ACCESS_R);
  acc(&s, in, ND_ACCESS_R);
  acc(&s, mean, ND_ACCESS_R);
  acc(&s, rstd, ND_ACCESS_R);
  s.t.a.ln = (struct nd_ln_args){N, C, 0, beta};
  emit(b, &s);
}

static void elementwise(builder *b, enum nd_task_kind kind, enum nd_phase ph, nd_rank r, int mb,
                        int layer, int32_t out, int32_t in0, int32_t in1, int replica) {
  task_spec s;
  spec_init(&s, kind, ph, r, mb, layer);
  s.t.replica = replica;
  s.t.a.ew.n = b->g->tensors[out].bytes / 4;
  acc(&s, out, ND_ACCESS_W);
  acc(&s, in0, ND_ACCESS_R);
  acc(&s, in1, ND_ACCESS_R);
  emit(b, &s);
}

static void load_batch(builder *b, nd_rank r, int mb, int tokens, int targets) {
  nd_graph *g = b->g;
  task_spec s;
  spec_init(&s, ND_TASK_LOAD_BATCH, ND_PHASE_F, r, mb, -1);
  s.t.replica = r.tp > 0;
  s.t.a.load = (struct nd_load_args){g->B, g->T, (r.dp * g->micro_batches + mb) * g->B, tokens, targets};
  if (tokens) acc(&s, A(b, r, mb, 0, A_TOKENS), ND_ACCESS_W);
  if (targets) acc(&s, A(b, r, mb, 0, A_TARGETS), ND_ACCESS_W);
  emit(b, &s);
}

/* ------------------------------------------------------------ forward */

static void layer_forward(builder *b, int d, int st, int mb, int l) {
  nd_graph *g = b->g;
  int BT = g->B * g->T, C = g->C, Cs = C / g->tp, H4s = 4 * Cs;
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    int32_t x = l == g->stage_first[st] ? A(b, r, mb, l, A_XIN) : A(b, r, mb, l - 1, A_XOUT);
    ln_fwd(b, r, mb, l, A(b, r, mb, l, A_LN1), A(b, r, mb, l, A_LN1_MEAN), A(b, r, mb, l, A_LN1_RSTD),
           x, P(b, r, LP(l, L_LN1_W)), P(b, r, LP(l, L_LN1_B)));
    matmul_fwd(b, r, mb, l, A(b, r, mb, l, A_QKV), A(b, r, mb, l, A_LN1), P(b, r, LP(l, L_QKV_W)),
               P(b, r, LP(l, L_QKV_B)), BT, C, 3 * Cs, 0);
    task_spec s;
    spec_init(&s, ND_TASK_ATTN_FWD, ND_PHASE_F, r, mb, l);
    s.t.a.attn = (struct nd_attn_args){g->B, g->T, g->NH / g->tp, C / g->NH};
    acc(&s, A(b, r, mb, l, A_ATTY), ND_ACCESS_W);
    acc(&s, A(b, r, mb, l, A_ATT), ND_ACCESS_W);
    acc(&s, A(b, r, mb, l, A_QKV), ND_ACCESS_R);
    emit(b, &s);
    matmul_fwd(b, r, mb, l, A(b, r, mb, l, A_ATTPROJ), A(b, r, mb, l, A_ATTY), P(b, r, LP(l, L_ATTPROJ_W)),
               t == 0 ? P(b, r, LP(l, L_ATTPROJ_B)) : -1, BT, Cs, C, 0);
  }
  allreduce_tp(b, d, st, l, A_ATTPROJ, mb);
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    int32_t x = l == g->stage_first[st] ? A(b, r, mb, l, A_XIN) : A(b, r, mb, l - 1, A_XOUT);
    elementwise(b, ND_TASK_RESIDUAL_FWD, ND_PHASE_F, r, mb, l, A(b, r, mb, l, A_RES2), x,
                A(b, r, mb, l, A_ATTPROJ), t > 0);
    ln_fwd(b, r, mb, l, A(b, r, mb, l, A_LN2), A(b, r, mb, l, A_LN2_MEAN), A(b, r, mb, l, A_LN2_RSTD),
           A(b, r, mb, l, A_RES2), P(b, r, LP(l, L_LN2_W)), P(b, r, LP(l, L_LN2_B)));
    matmul_fwd(b, r, mb, l, A(b, r, mb, l, A_FCH), A(b, r, mb, l, A_LN2), P(b, r, LP(l, L_FC_W)),
               P(b, r, LP(l, L_FC_B)), BT, C, H4s, 0);
    task_spec s;
    spec_init(&s, ND_TASK_ACT_FWD, ND_PHASE_F, r, mb, l);
    s.t.a.ew.n = (int64_t)BT * H4s;
    acc(&s, A(b, r, mb, l, A_FCH_ACT), ND_ACCESS_W);
    acc(&s, A(b, r, mb, l, A_FCH), ND_ACCESS_R);
    emit(b, &s);
    matmul_fwd(b, r, mb, l, A(b, r, mb, l, A_FCPROJ), A(b, r, mb, l, A_FCH_ACT),
               P(b, r, LP(l, L_MLPPROJ_W)), t == 0 ? P(b, r, LP(l, L_MLPPROJ_B)) : -1, BT, H4s, C, 0);
  }
  allreduce_tp(b, d, st, l, A_FCPROJ, mb);
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    elementwise(b, ND_TASK_RESIDUAL_FWD, ND_PHASE_F, r, mb, l, A(b, r, mb, l, A_XOUT),
                A(b, r, mb, l, A_RES2), A(b, r, mb, l, A_FCPROJ), t > 0);
  }
}

static void head_forward(builder *b, int d, int mb) {
  nd_graph *g = b->g;
  int st = g->pp - 1, BT = g->B * g->T, L = g->L;
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    ln_fwd(b, r, mb, L, A(b, r, mb, L, A_LNF), A(b, r, mb, L, A_LNF_MEAN), A(b, r, mb, L, A_LNF_RSTD),
           A(b, r, mb, L - 1, A_XOUT), P(b, r, P_LNF_W), P(b, r, P_LNF_B));
    matmul_fwd(b, r, mb, L, A(b, r, mb, L, A_LOGITS), A(b, r, mb, L, A_LNF), P(b, r, P_WTE), -1, BT,
               g->C, vocab_size(g, t), 1);
    task_spec s;
    spec_init(&s, ND_TASK_CE_STATS, ND_PHASE_F, r, mb, L);
    s.t.a.ce = (struct nd_ce_args){BT, vocab_size(g, t), vocab_begin(g, t), g->tp};
    acc(&s, A(b, r, mb, L, A_CE_STATS), ND_ACCESS_W);
    acc(&s, A(b, r, mb, L, A_LOGITS), ND_ACCESS_R);
    acc(&s, A(b, r, mb, L, A_TARGETS), ND_ACCESS_R);
    emit(b, &s);
  }
  /* log-sum-exp over the whole vocabulary: a collective when the vocabulary is split */
  task_spec s;
  spec_init(&s, ND_TASK_CE_COMBINE, g->tp > 1 ? ND_PHASE_COLLECTIVE : ND_PHASE_F, R(d, st, 0), mb, L);
  s.t.group = g->tp > 1 ? ND_GROUP_TP : ND_GROUP_NONE;
  s.t.a.ce = (struct nd_ce_args){BT, 0, 0, g->tp};
  for (int t = 0; t < g->tp; t++) acc(&s, A(b, R(d, st, t), mb, L, A_LSE), ND_ACCESS_W);
  for (int t = 0; t < g->tp; t++) acc(&s, A(b, R(d, st, t), mb, L, A_CE_STATS), ND_ACCESS_R);
  gacc(b, &s, g->loss[d]); /* the first micro-batch overwrites the last step's loss */
  s.t.comm_bytes = g->tp > 1 ? 2LL * (g->tp - 1) * BT * 3 * 4 : 0;
  emit(b, &s);
}

static void forward(builder *b, int d, int st, int mb) {
  nd_graph *g = b->g;
  int first = g->stage_first[st];
  if (st == 0) {
    for (int t = 0; t < g->tp; t++) load_batch(b, R(d, 0, t), mb, 1, g->pp == 1);
    for (int t = 0; t < g->tp; t++) {
      nd_rank r = R(d, 0, t);
      task_spec s;
      spec_init(&s, ND_TASK_EMBED_FWD, ND_PHASE_F, r, mb, -1);
      s.t.a.emb = (struct nd_emb_args){g->B, g->T, g->C, vocab_begin(g, t), vocab_size(g, t), t == 0, 0.0f};
      acc(&s, A(b, r, mb, first, A_XIN), ND_ACCESS_W);
      acc(&s, A(b, r, mb, 0, A_TOKENS), ND_ACCESS_R);
      acc(&s, P(b, r, P_WTE), ND_ACCESS_R);
      if (t == 0) acc(&s, P(b, r, P_WPE), ND_ACCESS_R);
      emit(b, &s);
    }
    allreduce_tp(b, d, 0, first, A_XIN, mb);
  } else {
    int prev_last = first - 1;
    for (int t = 0; t < g->tp; t++)
      sendrecv(b, ND_GROUP_PP_NEXT, A(b, R(d, st - 1, t), mb, prev_last, A_XOUT),
               A(b, R(d, st, t), mb, first, A_XIN), mb, first);
  }
  if (st == g->pp - 1 && g->pp > 1)
    for (int t = 0; t < g->tp; t++) load_batch(b, R(d, st, t), mb, 0, 1);
  for (int l = first; l < first + g->stage_layers[st]; l++) layer_forward(b, d, st, mb, l);
  if (st == g->pp - 1) head_forward(b, d, mb);
}

/* ------------------------------------------------------------ backward */

static void head_backward(builder *b, int d, int mb) {
  nd_graph *g = b->g;
  int st = g->pp - 1, BT = g->B * g->T, L = g->L;
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    task_spec s;
    spec_init(&s, ND_TASK_CE_BWD, ND_PHASE_B, r, mb, L);
    s.t.a.ce = (struct nd_ce_args){BT, vocab_size(g, t), vocab_begin(g, t), g->tp};
    acc(&s, A(b, r, mb, L, A_LOGITS), ND_ACCESS_RW); /* becomes dlogits, in place */
    acc(&s, A(b, r, mb, L, A_LSE), ND_ACCESS_R);
    acc(&s, A(b, r, mb, L, A_TARGETS), ND_ACCESS_R);
    emit(b, &s);
    matmul_bwd(b, r, mb, L, A(b, r, mb, L, A_D_LNF), A(b, r, mb, L, A_LOGITS), A(b, r, mb, L, A_LNF),
               P(b, r, P_WTE), G(b, r, P_WTE), -1, BT, g->C, vocab_size(g, t), 1);
  }
  allreduce_tp(b, d, st, L, A_D_LNF, mb);
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    ln_bwd(b, r, mb, L, A(b, r, mb, L - 1, A_D_XOUT), -1, A(b, r, mb, L, A_D_LNF),
           A(b, r, mb, L - 1, A_XOUT), P(b, r, P_LNF_W), A(b, r, mb, L, A_LNF_MEAN),
           A(b, r, mb, L, A_LNF_RSTD), G(b, r, P_LNF_W), G(b, r, P_LNF_B));
  }
}

static void layer_backward(builder *b, int d, int st, int mb, int l) {
  nd_graph *g = b->g;
  int BT = g->B * g->T, C = g->C, Cs = C / g->tp, H4s = 4 * Cs;
  int first = l == g->stage_first[st];
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    int32_t dxo = A(b, r, mb, l, A_D_XOUT);
    matmul_bwd(b, r, mb, l, A(b, r, mb, l, A_D_FCH_ACT), dxo, A(b, r, mb, l, A_FCH_ACT),
               P(b, r, LP(l, L_MLPPROJ_W)), G(b, r, LP(l, L_MLPPROJ_W)),
               t == 0 ? G(b, r, LP(l, L_MLPPROJ_B)) : -1, BT, H4s, C, 0);
    task_spec s;
    spec_init(&s, ND_TASK_ACT_BWD, ND_PHASE_B, r, mb, l);
    s.t.a.ew.n = (int64_t)BT * H4s;
    acc(&s, A(b, r, mb, l, A_D_FCH), ND_ACCESS_W);
    acc(&s, A(b, r, mb, l, A_FCH), ND_ACCESS_R);
    acc(&s, A(b, r, mb, l, A_D_FCH_ACT), ND_ACCESS_R);
    emit(b, &s);
    matmul_bwd(b, r, mb, l, A(b, r, mb, l, A_D_LN2), A(b, r, mb, l, A_D_FCH), A(b, r, mb, l, A_LN2),
               P(b, r, LP(l, L_FC_W)), G(b, r, LP(l, L_FC_W)), G(b, r, LP(l, L_FC_B)), BT, C, H4s, 0);
  }
  allreduce_tp(b, d, st, l, A_D_LN2, mb);
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    ln_bwd(b, r, mb, l, A(b, r, mb, l, A_D_RES2), A(b, r, mb, l, A_D_XOUT), A(b, r, mb, l, A_D_LN2),
           A(b, r, mb, l, A_RES2), P(b, r, LP(l, L_LN2_W)), A(b, r, mb, l, A_LN2_MEAN),
           A(b, r, mb, l, A_LN2_RSTD), G(b, r, LP(l, L_LN2_W)), G(b, r, LP(l, L_LN2_B)));
    matmul_bwd(b, r, mb, l, A(b, r, mb, l, A_D_ATTY), A(b, r, mb, l, A_D_RES2), A(b, r, mb, l, A_ATTY),
               P(b, r, LP(l, L_ATTPROJ_W)), G(b, r, LP(l, L_ATTPROJ_W)),
               t == 0 ? G(b, r, LP(l, L_ATTPROJ_B)) : -1, BT, Cs, C, 0);
    task_spec s;
    spec_init(&s, ND_TASK_ATTN_BWD, ND_PHASE_B, r, mb, l);
    s.t.a.attn = (struct nd_attn_args){g->B, g->T, g->NH / g->tp, C / g->NH};
    acc(&s, A(b, r, mb, l, A_D_QKV), ND_ACCESS_W);
    acc(&s, A(b, r, mb, l, A_D_ATT), ND_ACCESS_W);
    acc(&s, A(b, r, mb, l, A_D_ATTY), ND_ACCESS_R);
    acc(&s, A(b, r, mb, l, A_QKV), ND_ACCESS_R);
    acc(&s, A(b, r, mb, l, A_ATT), ND_ACCESS_R);
    emit(b, &s);
    matmul_bwd(b, r, mb, l, A(b, r, mb, l, A_D_LN1), A(b, r, mb, l, A_D_QKV), A(b, r, mb, l, A_LN1),
               P(b, r, LP(l, L_QKV_W)), G(b, r, LP(l, L_QKV_W)), G(b, r, LP(l, L_QKV_B)), BT, C, 3 * Cs, 0);
  }
  allreduce_tp(b, d, st, l, A_D_LN1, mb);
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, st, t);
    int32_t x = first ? A(b, r, mb, l, A_XIN) : A(b, r, mb, l - 1, A_XOUT);
    int32_t dx = first ? A(b, r, mb, l, A_D_XIN) : A(b, r, mb, l - 1, A_D_XOUT);
    ln_bwd(b, r, mb, l, dx, A(b, r, mb, l, A_D_RES2), A(b, r, mb, l, A_D_LN1), x,
           P(b, r, LP(l, L_LN1_W)), A(b, r, mb, l, A_LN1_MEAN), A(b, r, mb, l, A_LN1_RSTD),
           G(b, r, LP(l, L_LN1_W)), G(b, r, LP(l, L_LN1_B)));
  }
}

static void backward(builder *b, int d, int st, int mb) {
  nd_graph *g = b->g;
  int first = g->stage_first[st];
  if (st == g->pp - 1) head_backward(b, d, mb);
  for (int l = first + g->stage_layers[st] - 1; l >= first; l--) layer_backward(b, d, st, mb, l);
  if (st > 0) {
    for (int t = 0; t < g->tp; t++)
      sendrecv(b, ND_GROUP_PP_PREV, A(b, R(d, st, t), mb, first, A_D_XIN),
               A(b, R(d, st - 1, t), mb, first - 1, A_D_XOUT), mb, first);
    return;
  }
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = R(d, 0, t);
    /* wte and wpe are first written at different times (wte by the tied head
     * when there is one stage): one task each, so each gets its own beta */
    for (int which = 0; which < (t == 0 ? 2 : 1); which++) {
      task_spec s;
      spec_init(&s, ND_TASK_EMBED_BWD, ND_PHASE_W, r, mb, -1);
      float beta = gacc(b, &s, G(b, r, which ? P_WPE : P_WTE));
      acc(&s, A(b, r, mb, first, A_D_XIN), ND_ACCESS_R);
      acc(&s, A(b, r, mb, 0, A_TOKENS), ND_ACCESS_R);
      s.t.a.emb = (struct nd_emb_args){g->B, g->T, g->C, vocab_begin(g, t), which ? 0 : vocab_size(g, t),
                                       which, beta};
      emit(b, &s);
    }
  }
}

/* ------------------------------------------------------------ optimizer */

static void step_end(builder *b) {
  nd_graph *g = b->g;
  int32_t *parts = b->parts;
  /* the tied embedding's two gradients become their sum */
  if (g->pp > 1)
    for (int d = 0; d < g->dp; d++)
      for (int t = 0; t < g->tp; t++) {
        parts[0] = G(b, R(d, 0, t), P_WTE);
        parts[1] = G(b, R(d, g->pp - 1, t), P_WTE);
        allreduce(b, ND_GROUP_TIED, parts, 2, -1, -1);
      }
  /* data parallel: each gradient summed over the replicas, once it is complete */
  for (int st = 0; st < g->pp; st++)
    for (int t = 0; t < g->tp; t++)
      for (int p = 0; p < b->nparams; p++) {
        if (G(b, R(0, st, t), p) < 0) continue;
        int n = 0;
        for (int d = 0; d < g->dp; d++) parts[n++] = G(b, R(d, st, t), p);
        allreduce(b, ND_GROUP_DP, parts, n, -1, g->tensors[parts[0]].layer);
      }
  /* global gradient norm: each rank sums the squares of its primary gradients
   * (none on data-parallel replicas), then all ranks sum the partial sums */
  int n_norm = 0;
  for (int d = 0; d < g->dp; d++)
    for (int st = 0; st < g->pp; st++)
    for (int t = 0; t < g->tp; t++) {
      nd_rank r = R(d, st, t);
      task_spec s;
      spec_init(&s, ND_TASK_GRAD_SUMSQ, ND_PHASE_OPTIMIZER, r, -1, -1);
      int32_t out = b->normsq[nd_rank_index(g, r)];
      acc(&s, out, ND_ACCESS_W);
      for (int p = 0; p < b->nparams; p++) {
        int32_t gr = G(b, r, p);
        if (gr < 0 || !g->tensors[gr].primary) continue;
        acc(&s, gr, ND_ACCESS_R);
        s.t.a.sumsq.n += g->tensors[gr].bytes / 4;
      }
      s.t.a.sumsq.nparts = s.n - 1;
      emit(b, &s);
      parts[n_norm++] = out;
    }
  allreduce(b, ND_GROUP_ALL, parts, n_norm, -1, -1);
  for (int d = 0; d < g->dp; d++)
    for (int st = 0; st < g->pp; st++)
      for (int t = 0; t < g->tp; t++) {
        nd_rank r = R(d, st, t);
        for (int p = 0; p < b->nparams; p++) {
          int32_t pr = P(b, r, p);
          if (pr < 0) continue;
          task_spec s;
          spec_init(&s, ND_TASK_ADAMW, ND_PHASE_OPTIMIZER, r, -1, g->tensors[pr].layer);
          s.t.replica = !g->tensors[pr].primary;
          s.t.a.adamw.n = g->tensors[pr].bytes / 4;
          s.t.a.adamw.decay = g->tensors[pr].decay;
          acc(&s, pr, ND_ACCESS_RW);
          acc(&s, *pslot(b, b->mom, r, p), ND_ACCESS_RW);
          acc(&s, *pslot(b, b->vel, r, p), ND_ACCESS_RW);
          acc(&s, G(b, r, p), ND_ACCESS_R);
          acc(&s, b->normsq[nd_rank_index(g, r)], ND_ACCESS_R);
          emit(b, &s);
        }
      }
}

/* ------------------------------------------------------------ the step */

static int set_layout(nd_graph *g, const nd_config *cfg, nd_error *err) {
  g->dp = (int)cfg->parallelism.data_parallel_size;
  g->tp = (int)cfg->parallelism.tensor_parallel_size;
  g->pp = (int)cfg->parallelism.pipeline_parallel_size;
  g->micro_batches = (int)cfg->parallelism.micro_batches;
  g->slots = (int)cfg->parallelism.activation_slots;
  g->B = (int)cfg->train.micro_batch_size;
  g->T = (int)cfg->model.seq_len;
  g->C = (int)cfg->model.n_embd;
  g->NH = (int)cfg->model.n_head;
  g->L = (int)cfg->model.n_layer;
  g->V = (int)cfg->model.vocab_size;
  if (g->pp > ND_MAX_STAGES || g->L < g->pp)
    return nd__fail(err, ND_ECONFIG, "%s: layout does not fit the graph builder", cfg->source);
  int at = 0;
  for (int s = 0; s < g->pp; s++) {
    g->stage_layers[s] = cfg->parallelism.n_stage_layers
                             ? (int)cfg->parallelism.stage_layers[s]
                             : g->L / g->pp + (s < g->L % g->pp);
    g->stage_first[s] = at;
    at += g->stage_layers[s];
  }
  if (at != g->L) return nd__fail(err, ND_ECONFIG, "%s: stage_layers do not sum to n_layer", cfg->source);
  return 0;
}

int nd_graph_build(nd_graph **out, const nd_config *cfg, int forward_only, nd_error *err) {
  int rc = ND_ENOMEM;
  builder b = {0};
  nd_graph *g = calloc(1, sizeof *g);
  if (!g) return nd__fail(err, ND_ENOMEM, "graph: out of memory");
  b.g = g;
  if ((rc = set_layout(g, cfg, err))) goto cleanup;
  g->forward_only = forward_only;
  rc = ND_ENOMEM;

  b.nranks = g->dp * g->pp * g->tp;
  b.nparams = P_LAYER0 + L_NPARAMS * g->L;
  size_t ptab = (size_t)b.nranks * b.nparams;
  size_pools(g);
  for (int s = 0; s < g->pp; s++)
    for (int p = 0; p < ND_POOL_COUNT; p++) b.max_slots = g->pool_slots[s][p] > b.max_slots ? g->pool_slots[s][p] : b.max_slots;
  size_t atab = (size_t)b.nranks * b.max_slots * (g->L + 1) * A_COUNT;
  b.param = malloc(ptab * sizeof *b.param);
  b.grad = malloc(ptab * sizeof *b.grad);
  b.mom = malloc(ptab * sizeof *b.mom);
  b.vel = malloc(ptab * sizeof *b.vel);
  b.act = malloc(atab * sizeof *b.act);
  b.normsq = malloc((size_t)b.nranks * sizeof *b.normsq);
  b.parts = malloc((size_t)(b.nranks > 2 ? b.nranks : 2) * sizeof *b.parts);
  if (!b.param || !b.grad || !b.mom || !b.vel || !b.act || !b.normsq || !b.parts) goto cleanup;
  memset(b.param, 0xff, ptab * sizeof *b.param);
  memset(b.grad, 0xff, ptab * sizeof *b.grad);
  memset(b.mom, 0xff, ptab * sizeof *b.mom);
  memset(b.vel, 0xff, ptab * sizeof *b.vel);
  memset(b.act, 0xff, atab * sizeof *b.act);
  memset(b.normsq, 0xff, (size_t)b.nranks * sizeof *b.normsq);

  /* state first, in a fixed order, so that a training and an evaluation graph
   * of the same configuration name the same tensors */
  for (int d = 0; d < g->dp; d++)
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++) add_rank_params(&b, R(d, s, t));
  nd_tensor stat = {.kind = ND_TENSOR_STAT, .dtype = ND_F64, .ndim = 1, .shape = {1}, .layer = -1,
                    .slot = -1, .param = -1};
  if (!(g->loss = malloc((size_t)g->dp * sizeof *g->loss))) goto cleanup;
  for (int d = 0; d < g->dp; d++) {
    snprintf(stat.name, sizeof stat.name, "d%d.loss", d);
    stat.home = R(d, g->pp - 1, 0);
    g->loss[d] = add_tensor(&b, &stat);
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++) {
        snprintf(stat.name, sizeof stat.name, "d%dp%dt%d.grad_normsq", d, s, t);
        stat.home = R(d, s, t);
        b.normsq[nd_rank_index(g, stat.home)] = add_tensor(&b, &stat);
      }
  }
  if (b.oom) goto cleanup;
  /* every gradient and the loss exist now: track which were written */
  b.written = calloc((size_t)g->n_tensors, 1);
  if (!b.written) goto cleanup;

  if (forward_only) {
    for (int m = 0; m < g->micro_batches; m++)
      for (int d = 0; d < g->dp; d++)
        for (int s = 0; s < g->pp; s++) forward(&b, d, s, m);
  } else {
    /* A sequential program in which the last use of a buffer comes before
     * the next write of its slot: micro-batch k's B follows the forward of
     * k + fwd - 1 (FWD_B), its W follows the B of k + wgrad - 1 (GRAD_W) and
     * so the forward of k + fwd + wgrad - 2 (FWD_W). Any such order yields
     * the same dependencies; the scheduler decides what runs when. */
    int fwd = g->pool_slots[0][ND_POOL_FWD_B];
    b.defer_w = 1;
    for (int m = 0; m < g->micro_batches + fwd - 1; m++) {
      if (m < g->micro_batches)
        for (int d = 0; d < g->dp; d++)
          for (int s = 0; s < g->pp; s++) forward(&b, d, s, m);
      int k = m - fwd + 1;
      if (k >= 0 && k < g->micro_batches)
        for (int d = 0; d < g->dp; d++)
          for (int s = g->pp - 1; s >= 0; s--) backward(&b, d, s, k);
      for (int s = 0; s < g->pp; s++) flush_w(&b, s, k - (g->pool_slots[s][ND_POOL_GRAD_W] - 1));
    }
    for (int s = 0; s < g->pp; s++) flush_w(&b, s, g->micro_batches);
    step_end(&b);
  }
  if (b.oom) goto cleanup;
  if (b.bad_order) {
    rc = nd__fail(err, ND_EINVAL, "graph: a %s task's buffers differ from its row in graph/kinds.c",
                  nd_task_kind_name(b.bad_order - 1));
    goto cleanup;
  }
  *out = g;
  g = NULL;
  rc = 0;

cleanup:
  if (rc == ND_ENOMEM) nd__fail(err, rc, "graph: out of memory building the step");
  nd_graph_free(g);
  free(b.param);
  free(b.grad);
  free(b.mom);
  free(b.vel);
  free(b.act);
  free(b.normsq);
  free(b.parts);
  free(b.written);
  for (int k = 0; k < b.n_deferred; k++) free(b.deferred[k].acc); /* left by a failure */
  free(b.deferred);
  return rc;
}

int64_t nd_gpt_param_order(const char *hf_name) {
  if (strcmp(hf_name, "wte.weight") == 0) return 0;
  if (strcmp(hf_name, "wpe.weight") == 0) return 1;
  int layer, used = 0;
  if (sscanf(hf_name, "h.%d.%n", &layer, &used) == 1 && used > 0)
    for (int j = 0; j < L_NPARAMS; j++)
      if (strcmp(hf_name + used, layer_param_names[j]) == 0) return 2 + (int64_t)layer * L_NPARAMS + j;
  if (strcmp(hf_name, "ln_f.weight") == 0) return INT64_MAX - 1;
  return INT64_MAX;
}
