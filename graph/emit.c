/* The task emitters of graph/emit.h: collectives, the batch loader, linear
 * layers, the norms, the embedding and elementwise tasks, with gradients accumulated in a
 * fixed order (the first write of a step overwrites, later ones add). */
#include "graph/emit.h"

#include <stdlib.h>
#include <string.h>

#include "graph/kinds.h"
#include "graph/shard.h"

void nd__spec_init(nd__task_spec *s, enum nd_task_kind kind, enum nd_phase phase, nd_rank r, int mb, int layer) {
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

void nd__acc(nd__task_spec *s, int32_t tensor, int mode) {
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

float nd__gacc(nd__builder *b, nd__task_spec *s, int32_t tensor) {
  float beta = b->written[tensor] ? 1.0f : 0.0f;
  nd__acc(s, tensor, b->written[tensor] ? ND_ACCESS_RW : ND_ACCESS_W);
  b->written[tensor] = 1;
  return beta;
}

/* The kinds that read or write bf16 tensors: GEMMs, the weights' casts, and
 * the kernels whose output only GEMMs read (graph/state.h, gemm_in). */
static int takes_bf16(enum nd_task_kind k) {
  return k == ND_TASK_MATMUL_FWD || k == ND_TASK_MATMUL_BWD_IN || k == ND_TASK_MATMUL_BWD_W || k == ND_TASK_CAST_BF16 ||
         k == ND_TASK_LN_FWD || k == ND_TASK_RMSNORM_FWD || k == ND_TASK_ACT_FWD || k == ND_TASK_SWIGLU_FWD;
}

/* Does reduce-scatter s read a buffer that a held-back W task writes? Then it
 * is held back behind it, so that it sums the whole gradient and comes
 * before the next write of its pool slot (graph/gradbuf.h). */
static int reads_deferred(const nd__builder *b, const nd__task_spec *s) {
  if (s->t.kind != ND_TASK_REDUCE_SCATTER) return 0;
  for (int k = 0; k < b->n_deferred; k++) {
    const nd__task_spec *d = &b->deferred[k];
    const nd_access *acc = d->acc ? d->acc : d->fixed;
    for (int i = 0; i < d->n; i++)
      for (int j = 0; j < s->t.a.coll.nparts && (acc[i].mode & ND_ACCESS_W); j++)
        if (acc[i].tensor == s->acc[j].tensor) return 1;
  }
  return 0;
}

void nd__emit(nd__builder *b, nd__task_spec *s) {
  s->t.flops = nd__task_flops(&s->t);
  if (b->recomputing) {
    /* on the input gradient's path, timed and prioritized with it; the
     * forward's arithmetic once more, not the model's FLOPs */
    if (s->t.phase == ND_PHASE_F) s->t.phase = ND_PHASE_B;
    s->t.replica = 1;
  }
  for (int i = 0; i < s->n; i++)
    if (b->g->tensors[s->acc[i].tensor].dtype == ND_BF16) s->t.bf16 = 1;
  if (s->t.bf16 && !takes_bf16(s->t.kind)) b->bad_bf16 = s->t.kind + 1;
  /* the buffers in the order of the kind's row (graph/kinds.c): kernels read them so */
  if (s->oom) {
    b->oom = 1;
    if (s->acc != s->fixed) free(s->acc);
    return;
  }
  if (!nd_kind_check_access(&s->t, s->acc, s->n)) b->bad_order = s->t.kind + 1;
  if (b->defer_w && (s->t.phase == ND_PHASE_W || reads_deferred(b, s))) {
    /* appended later by nd__flush_w, in the same order among W tasks, so every
     * gradient is accumulated in the same order */
    if (b->n_deferred == b->cap_deferred) {
      int cap = b->cap_deferred ? 2 * b->cap_deferred : 64;
      nd__task_spec *more = realloc(b->deferred, (size_t)cap * sizeof *more);
      if (!more) {
        b->oom = 1;
        if (s->acc != s->fixed) free(s->acc);
        return;
      }
      b->deferred = more, b->cap_deferred = cap;
    }
    nd__task_spec *d = &b->deferred[b->n_deferred++];
    *d = *s;
    /* the copy moves (realloc, compaction): accesses kept in `fixed` are
     * found there (acc NULL), not through a pointer into the original */
    if (s->acc == s->fixed) d->acc = NULL;
    return;
  }
  if (nd__graph_add_task(b->g, &s->t, s->acc, s->n) < 0) b->oom = 1;
  if (s->acc != s->fixed) free(s->acc);
}

/* A flushed task's place: W tasks of one (rank, micro-batch, layer) are
 * brought together behind the first of them, so that they make one chain
 * (tasks/chain.h) where the builders interleave the ranks of a tensor group
 * or an all-reduce; anything else (a collective) stays where it is and none
 * moves across it. */
typedef struct w_place {
  int32_t seg, solo, dp, tp, mb, layer, first, pos;
} w_place;

static int cmp_key(const void *pa, const void *pb) {
  const w_place *a = pa, *b = pb;
  const int32_t ka[] = {a->seg, a->solo, a->dp, a->tp, a->mb, a->layer, a->pos};
  const int32_t kb[] = {b->seg, b->solo, b->dp, b->tp, b->mb, b->layer, b->pos};
  for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++)
    if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
  return 0;
}

static int cmp_place(const void *pa, const void *pb) {
  const w_place *a = pa, *b = pb;
  if (a->seg != b->seg) return a->seg < b->seg ? -1 : 1;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Where two W tasks write one gradient they are of one rank and layer
 * (micro-batches apart: their groups keep the order), or the tied embedding's
 * two uses, whose groups keep their order too: the sums are unchanged. */
void nd__flush_w(nd__builder *b, int st, int mb) {
  w_place *o = malloc((size_t)(b->n_deferred ? b->n_deferred : 1) * sizeof *o);
  if (!o) {
    b->oom = 1;
    return;
  }
  int n = 0, seg = 0, kept = 0;
  for (int k = 0; k < b->n_deferred; k++) {
    const nd_task *t = &b->deferred[k].t;
    if (t->rank.pp != st || t->micro_batch > mb) continue;
    int solo = t->phase != ND_PHASE_W || t->group != ND_GROUP_NONE;
    o[n++] = (w_place){seg, solo ? k + 1 : 0, t->rank.dp, t->rank.tp, t->micro_batch, t->layer, k, k};
    seg += solo;
  }
  qsort(o, (size_t)n, sizeof *o, cmp_key);
  for (int i = 1; i < n; i++)
    if (o[i].seg == o[i - 1].seg && !o[i].solo && !o[i - 1].solo && o[i].dp == o[i - 1].dp && o[i].tp == o[i - 1].tp &&
        o[i].mb == o[i - 1].mb && o[i].layer == o[i - 1].layer)
      o[i].first = o[i - 1].first;
  qsort(o, (size_t)n, sizeof *o, cmp_place);
  for (int i = 0; i < n; i++) {
    nd__task_spec *s = &b->deferred[o[i].pos];
    if (nd__graph_add_task(b->g, &s->t, s->acc ? s->acc : s->fixed, s->n) < 0) b->oom = 1;
    free(s->acc); /* NULL when the accesses were in `fixed` */
  }
  free(o);
  for (int k = 0; k < b->n_deferred; k++) {
    const nd_task *t = &b->deferred[k].t;
    if ((t->rank.pp != st || t->micro_batch > mb) && kept++ != k) b->deferred[kept - 1] = b->deferred[k];
  }
  b->n_deferred = kept;
}

/* ------------------------------------------------------------ collectives */

void nd__allreduce(nd__builder *b, enum nd_group group, const int32_t *parts, int n, int mb, int layer) {
  nd__allreduce_on(b, b->g->tensors[parts[0]].home, group, parts, n, mb, layer);
}

void nd__allreduce_on(nd__builder *b, nd_rank on, enum nd_group group, const int32_t *parts, int n, int mb, int layer) {
  if (n < 2) return;
  nd_graph *g = b->g;
  const nd_tensor *t0 = &g->tensors[parts[0]];
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_ALLREDUCE, ND_PHASE_COLLECTIVE, on, mb, layer);
  s.t.group = group;
  s.t.a.coll.nparts = n;
  s.t.a.coll.n = t0->bytes / nd_dtype_size(t0->dtype);
  s.t.a.coll.dtype = t0->dtype;
  s.t.comm_bytes = 2LL * (n - 1) * t0->bytes;
  for (int i = 0; i < n; i++) nd__acc(&s, parts[i], ND_ACCESS_RW);
  nd__emit(b, &s);
}

void nd__reduce_scatter(nd__builder *b, nd_rank on, const int32_t *parts, int n, const int32_t *outs, int n_outs,
                        int shards, int mb, int layer) {
  nd_graph *g = b->g;
  const nd_tensor *t0 = &g->tensors[parts[0]];
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_REDUCE_SCATTER, ND_PHASE_COLLECTIVE, on, mb, layer);
  s.t.group = ND_GROUP_DP;
  s.t.a.coll.nparts = n;
  s.t.a.coll.n = t0->bytes / 4;
  s.t.a.coll.dtype = ND_F32;
  s.t.a.coll.chunk = nd_dp_chunk(t0->bytes / 4, shards);
  s.t.a.coll.shards = shards;
  s.t.comm_bytes = (int64_t)(n - 1) * t0->bytes; /* half an all-reduce's: no whole sum comes back */
  for (int i = 0; i < n; i++) nd__acc(&s, parts[i], ND_ACCESS_R);
  for (int i = 0; i < n_outs; i++) nd__acc(&s, outs[i], ND_ACCESS_W);
  nd__emit(b, &s);
}

void nd__allreduce_tp(nd__builder *b, int d, int st, int layer, int which, int mb) {
  int32_t *parts = b->parts;
  for (int c = 0; c < b->g->cp; c++) {
    for (int t = 0; t < b->g->tp; t++) parts[t] = nd__act(b, nd__rank(d * b->g->cp + c, st, t), mb, layer, which);
    nd__allreduce(b, ND_GROUP_TP, parts, b->g->tp, mb, layer);
  }
}

void nd__sendrecv(nd__builder *b, enum nd_group group, int32_t src, int64_t offset, int32_t dst, int mb, int layer) {
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_SENDRECV, ND_PHASE_COLLECTIVE, b->g->tensors[src].home, mb, layer);
  s.t.group = group;
  s.t.a.send = (struct nd_send_args){b->g->tensors[dst].bytes / 4, offset};
  s.t.comm_bytes = b->g->tensors[dst].bytes;
  nd__acc(&s, src, ND_ACCESS_R);
  nd__acc(&s, dst, ND_ACCESS_W);
  nd__emit(b, &s);
}

void nd__allgather(nd__builder *b, const int32_t *parts, const int32_t *outs, int n, int mb, int layer) {
  const nd_tensor *out = &b->g->tensors[outs[0]];
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_ALLGATHER, ND_PHASE_COLLECTIVE, out->home, mb, layer);
  s.t.group = ND_GROUP_TP;
  s.t.a.coll = (struct nd_coll_args){.n = out->bytes / 4, .nparts = n, .dtype = ND_F32};
  s.t.comm_bytes = (int64_t)(n - 1) * out->bytes; /* each rank receives the parts it lacks */
  for (int i = 0; i < n; i++) nd__acc(&s, outs[i], ND_ACCESS_W);
  for (int i = 0; i < n; i++) nd__acc(&s, parts[i], ND_ACCESS_R);
  nd__emit(b, &s);
}

void nd__load_batch(nd__builder *b, nd_rank r, int mb, int32_t tokens, int32_t targets) {
  nd_graph *g = b->g;
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_LOAD_BATCH, ND_PHASE_F, r, mb, -1);
  s.t.replica = r.tp > 0;
  /* the context ranks of a replica read the same sequences, each its chunks */
  s.t.a.load = (struct nd_load_args){
      g->B, g->T, (r.dp / g->cp * g->micro_batches + mb) * g->B, tokens >= 0, targets >= 0, g->cp, r.dp % g->cp};
  if (tokens >= 0) nd__acc(&s, tokens, ND_ACCESS_W);
  if (targets >= 0) nd__acc(&s, targets, ND_ACCESS_W);
  nd__emit(b, &s);
}

/* ------------------------------------------------------------ layers */

void nd__matmul_fwd(nd__builder *b, nd_rank r, int mb, int layer, const nd__linear *x) {
  nd__task_spec s;
  int32_t w = nd__gemm_weight(b, mb, x->w);
  nd__spec_init(&s, ND_TASK_MATMUL_FWD, ND_PHASE_F, r, mb, layer);
  s.t.a.mm = (struct nd_mm_args){x->M, x->K, x->N, x->trans_w, x->bias >= 0, 0.0f};
  s.t.bf16 = b->bf16_copy != NULL;
  nd__acc(&s, x->out, ND_ACCESS_W);
  nd__acc(&s, x->inp, ND_ACCESS_R);
  nd__acc(&s, w, ND_ACCESS_R);
  if (x->bias >= 0) nd__acc(&s, x->bias, ND_ACCESS_R);
  nd__emit(b, &s);
}

void nd__matmul_bwd(nd__builder *b, nd_rank r, int mb, int layer, const nd__linear *x) {
  nd__task_spec s;
  if (x->dinp >= 0) {
    int32_t w = nd__gemm_weight(b, mb, x->w);
    nd__spec_init(&s, ND_TASK_MATMUL_BWD_IN, ND_PHASE_B, r, mb, layer);
    s.t.a.mm = (struct nd_mm_args){x->M, x->K, x->N, x->trans_w, 0, x->dinp_add ? 1.0f : 0.0f};
    s.t.bf16 = b->bf16_copy != NULL;
    nd__acc(&s, x->dinp, x->dinp_add ? ND_ACCESS_RW : ND_ACCESS_W);
    nd__acc(&s, x->dout, ND_ACCESS_R);
    nd__acc(&s, w, ND_ACCESS_R);
    nd__emit(b, &s);
  }
  nd__spec_init(&s, ND_TASK_MATMUL_BWD_W, ND_PHASE_W, r, mb, layer);
  float beta = nd__gacc(b, &s, x->dw);
  if (x->dbias >= 0) nd__gacc(b, &s, x->dbias); /* always written together with dw: same beta */
  nd__acc(&s, x->dout, ND_ACCESS_R);
  nd__acc(&s, x->inp, ND_ACCESS_R);
  s.t.a.mm = (struct nd_mm_args){x->M, x->K, x->N, x->trans_w, x->dbias >= 0, beta};
  s.t.bf16 = b->bf16_copy != NULL;
  nd__emit(b, &s);
}

void nd__norm_fwd(nd__builder *b, enum nd__norm_kind k, nd_rank r, int mb, int layer, const nd__norm *x) {
  nd__task_spec s;
  int N = b->g->B * b->g->T, C = b->g->C, ln = k == ND__LAYERNORM;
  nd__spec_init(&s, ln ? ND_TASK_LN_FWD : ND_TASK_RMSNORM_FWD, ND_PHASE_F, r, mb, layer);
  s.t.replica = r.tp > 0;
  if (ln)
    s.t.a.ln = (struct nd_ln_args){N, C, 0, 0.0f};
  else
    s.t.a.rms = (struct nd_rms_args){N, C, 0, 0.0f, (float)b->cfg->model.rms_norm_eps};
  nd__acc(&s, x->out, ND_ACCESS_W);
  if (ln) nd__acc(&s, x->mean, ND_ACCESS_W);
  nd__acc(&s, x->rstd, ND_ACCESS_W);
  nd__acc(&s, x->inp, ND_ACCESS_R);
  nd__acc(&s, x->w, ND_ACCESS_R);
  if (ln) nd__acc(&s, x->bias, ND_ACCESS_R);
  nd__emit(b, &s);
}

void nd__norm_bwd(nd__builder *b, enum nd__norm_kind k, nd_rank r, int mb, int layer, const nd__norm *x) {
  nd__task_spec s;
  int N = b->g->B * b->g->T, C = b->g->C, ln = k == ND__LAYERNORM;
  float eps = (float)b->cfg->model.rms_norm_eps;
  nd__spec_init(&s, ln ? ND_TASK_LN_BWD_IN : ND_TASK_RMSNORM_BWD_IN, ND_PHASE_B, r, mb, layer);
  s.t.replica = r.tp > 0;
  if (ln)
    s.t.a.ln = (struct nd_ln_args){N, C, x->dskip >= 0, 0.0f};
  else
    s.t.a.rms = (struct nd_rms_args){N, C, x->dskip >= 0, 0.0f, eps};
  nd__acc(&s, x->dinp, ND_ACCESS_W);
  if (x->dskip >= 0) nd__acc(&s, x->dskip, ND_ACCESS_R);
  nd__acc(&s, x->dout, ND_ACCESS_R);
  nd__acc(&s, x->inp, ND_ACCESS_R);
  nd__acc(&s, x->w, ND_ACCESS_R);
  if (ln) nd__acc(&s, x->mean, ND_ACCESS_R);
  nd__acc(&s, x->rstd, ND_ACCESS_R);
  nd__emit(b, &s);

  /* the norm's weight gradient goes with B, not W: it is small (N x C,
   * 0.6% of the benchmark's step), and W then needs neither the norm's input
   * and statistics nor its output gradient, which leave the pools that W
   * holds (graph/state.c): the last stage of bench/schedule fits a third W
   * waiting in 2 slots (docs/scheduler.md) */
  nd__spec_init(&s, ln ? ND_TASK_LN_BWD_W : ND_TASK_RMSNORM_BWD_W, ND_PHASE_B, r, mb, layer);
  s.t.replica = r.tp > 0;
  float beta = nd__gacc(b, &s, x->dw);
  if (ln) nd__gacc(b, &s, x->dbias);
  nd__acc(&s, x->dout, ND_ACCESS_R);
  nd__acc(&s, x->inp, ND_ACCESS_R);
  if (ln) nd__acc(&s, x->mean, ND_ACCESS_R);
  nd__acc(&s, x->rstd, ND_ACCESS_R);
  if (ln)
    s.t.a.ln = (struct nd_ln_args){N, C, 0, beta};
  else
    s.t.a.rms = (struct nd_rms_args){N, C, 0, beta, eps};
  nd__emit(b, &s);
}

/* ------------------------------------------------------------ embedding */

void nd__embed_fwd(nd__builder *b, nd_rank r, int mb, int32_t out, int32_t tokens, int32_t wte, int32_t wpe) {
  nd_graph *g = b->g;
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_EMBED_FWD, ND_PHASE_F, r, mb, -1);
  s.t.a.emb = (struct nd_emb_args){g->B, g->T, g->C, nd__vocab_begin(g, r.tp), nd__vocab_size(g, r.tp), wpe >= 0, 0.0f, 1, 0};
  nd__acc(&s, out, ND_ACCESS_W);
  nd__acc(&s, tokens, ND_ACCESS_R);
  nd__acc(&s, wte, ND_ACCESS_R);
  if (wpe >= 0) nd__acc(&s, wpe, ND_ACCESS_R);
  nd__emit(b, &s);
}

void nd__embed_bwd(nd__builder *b, nd_rank r, int mb, int32_t dwte, int32_t dwpe, int32_t dout, int32_t tokens) {
  nd_graph *g = b->g;
  /* wte and wpe are first written at different times (wte by the tied head
   * when there is one stage): one task each, so each gets its own beta */
  for (int pos = 0; pos < (dwpe >= 0 ? 2 : 1); pos++) {
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_EMBED_BWD, ND_PHASE_W, r, mb, -1);
    float beta = nd__gacc(b, &s, pos ? dwpe : dwte);
    nd__acc(&s, dout, ND_ACCESS_R);
    nd__acc(&s, tokens, ND_ACCESS_R);
    s.t.a.emb =
        (struct nd_emb_args){g->B, g->T, g->C, nd__vocab_begin(g, r.tp), pos ? 0 : nd__vocab_size(g, r.tp), pos, beta, 1, 0};
    nd__emit(b, &s);
  }
}

/* ------------------------------------------------------------ cross-entropy */

void nd__ce_stats(nd__builder *b, nd_rank r, int mb) {
  nd_graph *g = b->g;
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_CE_STATS, ND_PHASE_F, r, mb, g->L);
  s.t.a.ce = (struct nd_ce_args){g->B * g->T, nd__vocab_size(g, r.tp), nd__vocab_begin(g, r.tp), g->tp};
  nd__acc(&s, nd__stage_act(b, r, mb, ND__A_CE_STATS), ND_ACCESS_W);
  nd__acc(&s, nd__stage_act(b, r, mb, ND__A_LOGITS), ND_ACCESS_R);
  nd__acc(&s, nd__stage_act(b, r, mb, ND__A_TARGETS), ND_ACCESS_R);
  nd__emit(b, &s);
}

/* A task of the last stage over every shard's statistics of micro-batch mb
 * (a collective when split): the loss, into the step's sum (double), which
 * no task of the step waits for; or the log-sum-exp of each row, which the
 * backward reads (training only), a task apart so that, with one shard, it
 * runs where the statistics are and the backward never waits for a round
 * trip through the host. */
static void ce_over_shards(nd__builder *b, enum nd_task_kind kind, int d, int mb) {
  nd_graph *g = b->g;
  int st = g->pp - 1, BT = g->B * g->T, L = g->L, lse = kind == ND_TASK_CE_LSE;
  nd__task_spec s;
  nd__spec_init(&s, kind, g->tp > 1 ? ND_PHASE_COLLECTIVE : ND_PHASE_F, nd__rank(d, st, 0), mb, L);
  s.t.group = g->tp > 1 ? ND_GROUP_TP : ND_GROUP_NONE;
  s.t.a.ce = (struct nd_ce_args){BT, 0, 0, g->tp};
  for (int t = 0; lse && t < g->tp; t++) nd__acc(&s, nd__stage_act(b, nd__rank(d, st, t), mb, ND__A_LSE), ND_ACCESS_W);
  for (int t = 0; t < g->tp; t++) nd__acc(&s, nd__stage_act(b, nd__rank(d, st, t), mb, ND__A_CE_STATS), ND_ACCESS_R);
  if (!lse) nd__gacc(b, &s, g->loss[d]); /* the first micro-batch overwrites the last step's loss */
  /* the statistics gathered (3 values a row), the log-sum-exp sent back */
  s.t.comm_bytes = g->tp > 1 ? (int64_t)(g->tp - 1) * BT * (3 + lse) * 4 : 0;
  nd__emit(b, &s);
}

void nd__ce_combine(nd__builder *b, int d, int mb) { ce_over_shards(b, ND_TASK_CE_COMBINE, d, mb); }
void nd__ce_lse(nd__builder *b, int d, int mb) { ce_over_shards(b, ND_TASK_CE_LSE, d, mb); }

void nd__ce_bwd(nd__builder *b, nd_rank r, int mb) {
  nd_graph *g = b->g;
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_CE_BWD, ND_PHASE_B, r, mb, g->L);
  s.t.a.ce = (struct nd_ce_args){g->B * g->T, nd__vocab_size(g, r.tp), nd__vocab_begin(g, r.tp), g->tp};
  nd__acc(&s, nd__stage_act(b, r, mb, ND__A_LOGITS), ND_ACCESS_RW); /* becomes dlogits, in place */
  nd__acc(&s, nd__stage_act(b, r, mb, ND__A_LSE), ND_ACCESS_R);
  nd__acc(&s, nd__stage_act(b, r, mb, ND__A_TARGETS), ND_ACCESS_R);
  nd__emit(b, &s);
}

void nd__elementwise(nd__builder *b, enum nd_task_kind kind, enum nd_phase ph, nd_rank r, int mb, int layer,
                     int32_t out, int32_t in0, int32_t in1, int replica) {
  nd__task_spec s;
  nd__spec_init(&s, kind, ph, r, mb, layer);
  s.t.replica = replica;
  s.t.a.ew.n = b->g->tensors[out].bytes / nd_dtype_size(b->g->tensors[out].dtype);
  nd__acc(&s, out, ND_ACCESS_W);
  nd__acc(&s, in0, ND_ACCESS_R);
  nd__acc(&s, in1, ND_ACCESS_R);
  nd__emit(b, &s);
}
