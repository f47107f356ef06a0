/* The per-rank state tables of a model builder (graph/state.h): the layout,
 * parameters with their gradients and moments, activation pools sized by
 * lifetime within `activation_slots`, and the per-step scalars. */
#include "graph/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/emit.h"
#include "graph/gather.h"
#include "graph/gradbuf.h"
#include "graph/priority.h"
#include "graph/shard.h"

int nd__set_layout(nd_graph *g, const nd_config *cfg, nd_error *err) {
  g->cp = (int)cfg->parallelism.context_parallel_size;
  g->dp = (int)cfg->parallelism.data_parallel_size * g->cp;
  g->tp = (int)cfg->parallelism.tensor_parallel_size;
  g->pp = (int)cfg->parallelism.pipeline_parallel_size;
  g->split_tp = cfg->runtime.split_tensor_groups;
  g->bf16 = nd_config_precision(cfg) == ND_PRECISION_BF16;
  g->dp_shard = cfg->parallelism.data_parallel_shard;
  g->shard_size = cfg->parallelism.data_parallel_shard_size ? (int)cfg->parallelism.data_parallel_shard_size : g->dp;
  g->micro_batches = (int)cfg->parallelism.micro_batches;
  g->slots = (int)cfg->parallelism.activation_slots;
  g->B = (int)cfg->train.micro_batch_size;
  g->T = (int)cfg->model.seq_len / g->cp;
  g->C = (int)cfg->model.n_embd;
  g->NH = (int)cfg->model.n_head;
  g->L = (int)cfg->model.n_layer;
  g->V = (int)cfg->model.vocab_size;
  if (g->pp > ND_MAX_STAGES || g->L < g->pp)
    return nd__fail(err, ND_ECONFIG, "%s: layout does not fit the graph builder",
                    nd__config_origin(cfg, "parallelism.pipeline_parallel_size"));
  int at = 0;
  for (int s = 0; s < g->pp; s++) {
    g->stage_layers[s] =
        cfg->parallelism.n_stage_layers ? (int)cfg->parallelism.stage_layers[s] : g->L / g->pp + (s < g->L % g->pp);
    g->stage_first[s] = at;
    at += g->stage_layers[s];
  }
  if (at != g->L)
    return nd__fail(err, ND_ECONFIG, "%s: stage_layers do not sum to n_layer",
                    nd__config_origin(cfg, "parallelism.stage_layers"));
  return 0;
}

int32_t nd__add_tensor(nd__builder *b, nd_tensor *t) {
  t->bytes = nd_dtype_size(t->dtype);
  for (int i = 0; i < t->ndim; i++) t->bytes *= t->shape[i];
  int32_t id = nd__graph_add_tensor(b->g, t);
  if (id < 0) b->oom = 1;
  return id;
}

/* ------------------------------------------------------------ parameters */

int32_t *nd__pslot(nd__builder *b, int32_t *table, nd_rank r, int p) {
  return &table[nd_rank_index(b->g, r) * b->nparams + p];
}

/* Turns moment t (the whole tensor's shape) into rank r's range of it; 0
 * where the range is empty. Within a shard group, the copy of the replica
 * that holds the parameter's primary copy is primary: every range of it is
 * checkpointed once (primary0: whether replica 0's parameter is primary). */
static int shard_moment(nd__builder *b, nd_rank r, int primary0, nd_tensor *t) {
  const nd_graph *g = b->g;
  int64_t whole = t->ndim == 1 ? t->shape[0] : t->shape[0] * t->shape[1], begin, n;
  nd_dp_range(whole, g->shard_size, r.dp % g->shard_size, &begin, &n);
  if (n == 0) return 0;
  t->shape[0] = n; /* ndim kept: full_shape reads as the parameter's */
  t->shape[1] = t->ndim == 2 ? 1 : 0;
  t->dp_begin = begin;
  t->dp_numel = whole;
  t->primary = r.dp < g->shard_size && primary0;
  return 1;
}

/* A summed gradient's range (data_parallel_shard gradients): as a moment's,
 * but never empty and padded to the whole chunk (zeros that nothing writes),
 * so that every rank of a shard group holds one of each gradient and the
 * norm's lanes line up (graph/optim.c). */
static void shard_grad(nd__builder *b, nd_tensor *t) {
  const nd_graph *g = b->g;
  int64_t whole = t->ndim == 1 ? t->shape[0] : t->shape[0] * t->shape[1], n;
  nd_dp_range(whole, g->shard_size, t->home.dp % g->shard_size, &t->dp_begin, &n);
  t->shape[0] = nd_dp_chunk(whole, g->shard_size);
  t->shape[1] = t->ndim == 2 ? 1 : 0;
  t->dp_numel = whole;
}

void nd__add_param(nd__builder *b, nd_rank r, int p, const nd__param_spec *spec) {
  static const char *const suffix[] = {"", ".grad", ".m", ".v"};
  static const enum nd_tensor_kind kinds[] = {ND_TENSOR_PARAM, ND_TENSOR_GRAD, ND_TENSOR_OPTSTATE, ND_TENSOR_OPTSTATE};
  int32_t *tables[] = {b->store, b->gsum, b->mom, b->vel};
  /* the tensor in the rank's whole layout (a data-parallel range's param) */
  int32_t gathered = spec->layer >= 0 ? nd__gathered_slot(b, r, spec) : -1, layout = gathered;
  nd_rank r0 = nd__rank(0, r.pp, r.tp); /* replica 0, added first */
  for (int k = 0; k < 4; k++) {
    nd_tensor t = {0};
    snprintf(t.name, sizeof t.name, "d%dp%dt%d.%s%s", r.dp, r.pp, r.tp, spec->hf, suffix[k]);
    snprintf(t.hf_name, sizeof t.hf_name, "%s", spec->hf);
    t.kind = kinds[k];
    t.dtype = ND_F32;
    t.ndim = spec->ndim;
    t.shape[0] = spec->shape[0];
    t.shape[1] = spec->shape[1];
    t.full_shape[0] = spec->full[0];
    t.full_shape[1] = spec->full[1];
    t.home = r;
    t.layer = spec->layer;
    t.slot = -1;
    t.shard = spec->shard;
    t.shard_begin = spec->shard_begin;
    t.primary = spec->primary;
    t.decay = spec->decay;
    t.param = k == 0 ? gathered : layout;
    int primary0 = r.dp == 0 && k == 0 ? spec->primary : b->g->tensors[nd__param_store(b, r0, p)].primary;
    /* reduce-scattered gradients: a range of each counts on every rank of the first shard group */
    if (k == 1 && b->g->dp_shard >= ND_DP_SHARD_GRADIENTS) t.primary = r.dp < b->g->shard_size && primary0;
    /* AdamW's moments, sharded: this rank's contiguous range of the elements;
     * under parameters, a block's weight too (its tasks read it gathered) */
    int ranged = k >= 2 ? b->g->dp_shard != ND_DP_SHARD_NONE : k == 0 ? gathered >= 0 : nd__grad_ranges(b->g);
    if (k == 1 && ranged) {
      shard_grad(b, &t);
    } else if (ranged && !shard_moment(b, r, primary0, &t)) {
      *nd__pslot(b, tables[k], r, p) = -1; /* an empty range: nothing of it here */
      continue;
    }
    int32_t id = nd__add_tensor(b, &t);
    if (k == 0 && layout < 0) layout = id;
    *nd__pslot(b, tables[k], r, p) = id;
  }
  *nd__pslot(b, b->param, r, p) = layout;
  int32_t sum = *nd__pslot(b, b->gsum, r, p);
  *nd__pslot(b, b->grad, r, p) = nd__grad_ranges(b->g) ? nd__grad_buffer(b, r, spec) : sum;
}

int32_t nd__gemm_weight(nd__builder *b, int mb, int32_t w) {
  if (!b->bf16_copy || w < 0 || w >= b->n_state) return w;
  if (b->bf16_copy[w] >= 0) return b->bf16_copy[w];
  nd_tensor t = b->g->tensors[w];
  /* parameter names stay far below the limit (rank prefix and a Hugging Face name of at most 47) */
  snprintf(t.name, sizeof t.name, "%.*s.bf16", (int)sizeof t.name - 6, b->g->tensors[w].name);
  t.kind = ND_TENSOR_PARAM_COPY;
  t.dtype = ND_BF16;
  t.param = w;
  int32_t copy = nd__add_tensor(b, &t);
  if (copy < 0) return w;
  b->bf16_copy[w] = copy;
  /* one cast per shard and step, elementwise: every layout reads the same
   * bf16 values of a weight, as in fp32 it reads the same fp32 ones */
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_CAST_BF16, ND_PHASE_F, t.home, mb, t.layer);
  s.t.replica = !t.primary;
  s.t.bf16 = 1;
  s.t.a.ew.n = t.bytes / 2;
  nd__acc(&s, copy, ND_ACCESS_W);
  nd__acc(&s, w, ND_ACCESS_R);
  nd__emit(b, &s);
  return copy;
}

/* ------------------------------------------------------------ activations */

static const nd__act_row stage_rows[ND__STAGE_ACTS] = {
    [ND__A_TOKENS] = {"tokens", ND_POOL_FWD_W, ND__ACT_TOKENS, ND__AT_FIRST},
    [ND__A_TARGETS] = {"targets", ND_POOL_FWD_B, ND__ACT_TOKENS, ND__AT_LAST},
    /* read by F and B only, but in the deeper FWD_W pool: the next
     * micro-batch's input then arrives while the stage still runs B (in
     * FWD_B, one slot on the last stage, the send waited for that B) */
    [ND__A_XIN] = {"xin", ND_POOL_FWD_W, ND__ACT_HIDDEN, ND__AT_STAGE},
    [ND__A_D_XIN] = {"d_xin", ND_POOL_GRAD_W, ND__ACT_HIDDEN, ND__AT_STAGE},
    [ND__A_LNF] = {"lnf", ND_POOL_FWD_W, ND__ACT_HIDDEN, ND__AT_LAST, .gemm_in = 1},
    [ND__A_LNF_MEAN] = {"lnf_mean", ND_POOL_FWD_B, ND__ACT_ROW, ND__AT_LAST},
    [ND__A_LNF_RSTD] = {"lnf_rstd", ND_POOL_FWD_B, ND__ACT_ROW, ND__AT_LAST},
    [ND__A_LOGITS] = {"logits", ND_POOL_FWD_W, ND__ACT_LOGITS, ND__AT_LAST},
    [ND__A_CE_STATS] = {"ce_stats", ND_POOL_FWD_SCRATCH, ND__ACT_CE_STATS, ND__AT_LAST},
    [ND__A_LSE] = {"lse", ND_POOL_FWD_B, ND__ACT_ROW, ND__AT_LAST},
    [ND__A_D_LNF] = {"d_lnf", ND_POOL_GRAD_B, ND__ACT_HIDDEN, ND__AT_LAST},
    /* in the pools of what they are gathered into */
    [ND__A_XIN_PART] = {"xin_part", ND_POOL_FWD_W, ND__ACT_SLICE, ND__AT_STAGE},
    [ND__A_D_XOUT_PART] = {"d_xout_part", ND_POOL_GRAD_W, ND__ACT_SLICE, ND__AT_STAGE},
};

static const nd__act_row *row_of(const nd__act_set *as, int which) {
  return which < as->count ? &as->rows[which] : &stage_rows[which - as->count];
}

/* Kind, dtype and shape of activation row a on rank r; returns its bytes. */
static int64_t act_shape(const nd_graph *g, const nd__act_row *a, nd_rank r, nd_tensor *t) {
  int64_t B = g->B, T = g->T;
  const int64_t width[] = {
      [ND__WIDTH_C] = g->C, [ND__WIDTH_KV] = (int64_t)g->NKV * (g->C / g->NH), [ND__WIDTH_FF] = g->FF};
  int64_t s[4] = {B, T, 0, 0};
  t->kind = ND_TENSOR_ACTIVATION;
  t->dtype = a->gemm_in && g->bf16 ? ND_BF16 : ND_F32;
  switch (a->shape) {
  case ND__ACT_HIDDEN:
    s[2] = g->C;
    break;
  case ND__ACT_TOKENS:
    t->kind = ND_TENSOR_INPUT;
    t->dtype = ND_I32;
    break;
  case ND__ACT_SPLIT:
    s[2] = a->mult * (width[a->width] / g->tp);
    break;
  case ND__ACT_HEAD_ROW:
    s[1] = g->NH / g->tp;
    s[2] = T;
    break;
  case ND__ACT_LOGITS:
    s[0] = B * T;
    s[1] = nd__vocab_size(g, r.tp);
    break;
  case ND__ACT_CE_STATS:
    s[0] = B * T;
    s[1] = 3;
    break;
  case ND__ACT_SLICE:
    s[0] = nd__slice_begin(g, r.tp + 1) - nd__slice_begin(g, r.tp);
    s[1] = 0;
    break;
  default: /* ND__ACT_ROW */
    break;
  }
  int64_t bytes = nd_dtype_size(t->dtype);
  t->ndim = 0;
  while (t->ndim < 4 && s[t->ndim]) bytes *= s[t->ndim], t->shape[t->ndim] = s[t->ndim], t->ndim++;
  return bytes;
}

/* Does the build make activation `which` on rank r? The pools are sized by
 * what it makes: a row counted but never made would lend the other rows its
 * memory, deepening the pools past the bound. */
static int act_on_rank(const nd_graph *g, const nd__act_set *as, int which, nd_rank r) {
  const nd__act_row *a = row_of(as, which);
  int sliced = g->tp > 1 && !g->split_tp; /* hand-overs send slices (graph/stage.c) */
  if (which == as->count + ND__A_LNF_MEAN && !as->lnf_mean) return 0;
  if (which == as->count + ND__A_XIN_PART) return sliced && r.pp > 0;
  if (which == as->count + ND__A_D_XOUT_PART) return sliced && r.pp + 1 < g->pp;
  if (a->layers_share) return g->cp > 1; /* the ring's transients */
  switch (a->where) {
  case ND__AT_FIRST:
    return r.pp == 0;
  case ND__AT_LAST:
    return r.pp == g->pp - 1;
  default:
    return 1;
  }
}

/* layer: all but a block's output and its gradient, which pass between
 * blocks (the output is the next block's input, kept for its recomputation);
 * attention: what only the attention's backward reads */
int nd__act_shared(const nd__builder *b, int which) {
  const nd__act_set *as = b->acts;
  if (which >= as->count) return 0;
  if (as->rows[which].layers_share) return 1;
  if (b->recompute == ND_RECOMPUTE_LAYER) return which != as->xout && which != as->d_xout;
  return b->recompute == ND_RECOMPUTE_ATTENTION && which == as->attn_saved;
}

static int32_t *table(size_t n);

int32_t nd__act(nd__builder *b, nd_rank r, int mb, int layer, int which) {
  nd_graph *g = b->g;
  const nd__act_set *as = b->acts;
  const nd__act_row *a = row_of(as, which);
  int at_stage = which >= as->count, shared = nd__act_shared(b, which), n = as->count + ND__STAGE_ACTS;
  int li = at_stage || shared ? g->L : layer, slot = nd_act_slot(g, r.pp, a->pool, mb);
  int32_t **rows = &b->act[nd_rank_index(g, r)];
  /* a rank's rows on its first activation: a build of some ranks' work
   * (nd_graph_build_pairs) holds only theirs */
  if (!*rows && !(*rows = table((size_t)b->max_slots * (g->L + 1) * n))) {
    b->oom = 1;
    return -1;
  }
  int64_t idx = ((int64_t)slot * (g->L + 1) + li) * n + which;
  if ((*rows)[idx] >= 0) return (*rows)[idx];

  nd_tensor t = {0};
  act_shape(g, a, r, &t);
  t.home = r;
  t.layer = at_stage || shared ? -1 : layer;
  t.slot = slot;
  t.param = -1;
  if (shared)
    snprintf(t.name, sizeof t.name, "d%dp%dt%d.s%d.layers.%s", r.dp, r.pp, r.tp, slot, a->name);
  else if (at_stage)
    snprintf(t.name, sizeof t.name, "d%dp%dt%d.s%d.%s", r.dp, r.pp, r.tp, slot, a->name);
  else
    snprintf(t.name, sizeof t.name, "d%dp%dt%d.s%d.h%d.%s", r.dp, r.pp, r.tp, slot, layer, a->name);
  return (*rows)[idx] = nd__add_tensor(b, &t);
}

int32_t nd__layer_input(nd__builder *b, nd_rank r, int mb, int l) {
  return l == b->g->stage_first[r.pp] ? nd__stage_act(b, r, mb, ND__A_XIN) : nd__act(b, r, mb, l - 1, b->acts->xout);
}

int32_t nd__layer_input_grad(nd__builder *b, nd_rank r, int mb, int l) {
  return l == b->g->stage_first[r.pp] ? nd__stage_act(b, r, mb, ND__A_D_XIN)
                                      : nd__act(b, r, mb, l - 1, b->acts->d_xout);
}

/* Stage st's pool depths with fwd[s] forwards in flight on each stage s and
 * its W tasks wgrad[st] - 1 micro-batches behind their B. The gradient that
 * stage st + 1's B sends to st is written when st + 1 runs B, fwd[st] -
 * fwd[st + 1] micro-batches ahead of st's B reading it (graph/build.c), so
 * GRAD_W holds that many more. */
static void stage_depths(const nd_graph *g, int st, const int *fwd, const int *wgrad, int *depth) {
  int ahead = st + 1 < g->pp ? fwd[st] - fwd[st + 1] : 0;
  depth[ND_POOL_FWD_SCRATCH] = depth[ND_POOL_GRAD_B] = 1;
  depth[ND_POOL_FWD_B] = fwd[st];
  depth[ND_POOL_FWD_W] = fwd[st] + wgrad[st] - 1;
  depth[ND_POOL_GRAD_W] = wgrad[st] + ahead;
}

/* Do stage st's pools fit within the bound (every tensor-parallel rank),
 * with tail more FWD_W slots? */
static int pools_fit(const nd__builder *b, int st, const int *fwd, const int *wgrad, int tail) {
  const nd_graph *g = b->g;
  const nd__act_set *as = b->acts;
  int depth[ND_POOL_COUNT];
  stage_depths(g, st, fwd, wgrad, depth);
  depth[ND_POOL_FWD_W] += tail;
  if (fwd[st] > g->micro_batches || wgrad[st] > g->micro_batches) return 0;
  for (int t = 0; t < g->tp; t++) {
    nd_rank r = {0, st, t};
    int64_t one = 0, used = 0;
    for (int a = 0; a < as->count + ND__STAGE_ACTS; a++) {
      if (!act_on_rank(g, as, a, r)) continue;
      nd_tensor x = {0};
      const nd__act_row *row = row_of(as, a);
      /* one buffer per layer, or per stage where the build shares it (nd__act) */
      int64_t bytes = act_shape(g, row, r, &x) * (a < as->count && !nd__act_shared(b, a) ? g->stage_layers[st] : 1);
      one += bytes;
      used += bytes * depth[row->pool];
    }
    if (used > (int64_t)g->slots * one) return 0;
  }
  return 1;
}

static int all_fit(const nd__builder *b, const int *fwd, const int *wgrad) {
  int fits = 1;
  for (int s = 0; s < b->g->pp && fits; s++) fits = pools_fit(b, s, fwd, wgrad, 0);
  return fits;
}

/* Pool depths. The bound is `activation_slots` micro-batches of every
 * activation of a rank. Scratch pools (read within one forward or one input
 * gradient) need one slot; fwd forwards in flight need fwd slots of what B
 * reads; W may run wgrad - 1 micro-batches after its B, so what W reads needs
 * wgrad slots of gradients and fwd + wgrad - 1 of forward data. Every policy
 * but gpipe, 1f1b and 1f1b-split first gets what ZB-H1 needs (Qi et al.;
 * graph/priority.c's zb_times) when it fits: p - s forwards in flight on stage s as
 * the paper's ZB-H1 runs them (the last stage runs B right after its
 * forward, so a second forward in flight there only takes memory that a
 * waiting W can use: measured, fwd 2 on both stages was slower than fwd 2, 1,
 * docs/scheduler.md; zbh2 tries 2p - 1 on every stage first); W waiting s
 * micro-batches behind its B on stage s, so that the later stages can run
 * the next B before a pending W. Otherwise it starts from 1F1B's (slots, 1).
 * Then depth is added to every stage's fwd at once (the program order of B
 * keeps their differences; from the zero-bubble shape, to every stage's but
 * the last, for the same reason) and to each
 * stage's wgrad in turn while they fit: the memory that the scratch pools
 * save buys forwards in flight and W tasks that wait. In the simulator this
 * gives ndws and zbh1 ZB-H1's step where 1F1B's starting point gives 1F1B's
 * (docs/scheduler.md). */
static void size_pools(const nd__builder *b, const char *policy) {
  nd_graph *g = b->g;
  int m = g->micro_batches, fwd[ND_MAX_STAGES], wgrad[ND_MAX_STAGES];
  int fixed = policy ? nd_fixed_schedule_of(policy) : -1, fits = 0;
  if (g->pp > 1 && fixed != ND_FIXED_GPIPE && fixed != ND_FIXED_1F1B && fixed != ND_FIXED_1F1B_SPLIT) {
    /* zbh2 first tries its 2p - 1 forwards on every stage */
    int zbh2 = fixed == ND_FIXED_ZBH2;
    for (int k = !zbh2; k < 2 && !fits; k++) {
      for (int s = 0; s < g->pp; s++) {
        int f = k ? g->pp - s : 2 * g->pp - 1;
        fwd[s] = f < m ? f : m;
        wgrad[s] = s + 1 < m ? s + 1 : m;
      }
      fits = all_fit(b, fwd, wgrad);
    }
  }
  /* 1f1b and 1f1b-split run p - s forwards in flight on stage s. The
   * program must order each stage's F and B as they do: the recomputation
   * in micro-batch k's B writes the buffers that the forwards of k + 1 ...
   * k + fwd_s - 1 (before it in the program) also write, so a deeper fwd_s
   * makes B(k) wait for later forwards that 1F1B runs after it, and the
   * fixed order then interleaves them layer by layer with B (measured: a
   * 48% bubble at pp 2 with layer recomputation, against 1F1B's 2%). */
  int fixed_fwd = 0;
  if (g->pp > 1 && (fixed == ND_FIXED_1F1B || fixed == ND_FIXED_1F1B_SPLIT)) {
    for (int s = 0; s < g->pp; s++) fwd[s] = g->pp - s < m ? g->pp - s : m, wgrad[s] = 1;
    fits = fixed_fwd = all_fit(b, fwd, wgrad);
  }
  int last_holds = fits; /* from a zero-bubble shape the last stage's forwards stay as they are */
  for (int s = 0; s < g->pp && !fits; s++) fwd[s] = g->slots < m ? g->slots : m, wgrad[s] = 1;
  for (int grew = 1; grew;) {
    int n_grow = fixed_fwd ? 0 : last_holds ? g->pp - 1 : g->pp;
    for (int s = 0; s < n_grow; s++) fwd[s]++;
    grew = n_grow > 0 && all_fit(b, fwd, wgrad);
    for (int s = 0; s < n_grow; s++) fwd[s] -= !grew;
    for (int s = 0; s < g->pp; s++) {
      wgrad[s]++;
      int more = pools_fit(b, s, fwd, wgrad, 0);
      wgrad[s] -= !more;
      grew |= more;
    }
  }
  for (int s = 0; s < g->pp; s++) {
    stage_depths(g, s, fwd, wgrad, g->pool_slots[s]);
    /* What memory is left after that buys the last forward a FWD_W slot of
     * its own, under the dynamic policies (the fixed orders keep the
     * textbook's memory): it then need not wait for the W of the micro-batch
     * whose slot it would reuse, and that W fills the wait for the last
     * input gradient instead (docs/scheduler.md, *Activation memory*). Only the last
     * forward: with one more slot for every forward each W ran later,
     * colder and slower, for no gain (*Where the last percent goes*). */
    g->fwd_w_tail[s] = fixed < 0 && g->pp > 1 && m > g->pool_slots[s][ND_POOL_FWD_W] && pools_fit(b, s, fwd, wgrad, 1);
  }
}

/* ------------------------------------------------------------ the builder */

static int32_t *table(size_t n) {
  int32_t *t = malloc(n * sizeof *t);
  if (t) memset(t, 0xff, n * sizeof *t);
  return t;
}

int nd__builder_init(nd__builder *b, nd_graph *g, const nd__act_set *acts, int nparams) {
  b->g = g;
  b->acts = acts;
  b->nranks = g->dp * g->pp * g->tp;
  b->nparams = nparams;
  size_pools(b, b->cfg ? b->cfg->runtime.scheduler : NULL);
  for (int s = 0; s < g->pp; s++)
    for (int p = 0; p < ND_POOL_COUNT; p++) {
      int slots = g->pool_slots[s][p] + (p == ND_POOL_FWD_W ? g->fwd_w_tail[s] : 0);
      if (slots > b->max_slots) b->max_slots = slots;
    }
  size_t ptab = (size_t)b->nranks * b->nparams;
  b->param = table(ptab);
  b->store = table(ptab);
  b->grad = table(ptab);
  b->gsum = table(ptab);
  b->mom = table(ptab);
  b->vel = table(ptab);
  b->act = calloc((size_t)b->nranks, sizeof *b->act);
  b->normsq = table((size_t)b->nranks);
  b->lanes = table((size_t)b->nranks);
  b->parts = malloc((size_t)(b->nranks > 2 ? b->nranks : 2) * sizeof *b->parts);
  g->loss = malloc((size_t)g->dp * sizeof *g->loss);
  if (!b->param || !b->store || !b->grad || !b->gsum || !b->mom || !b->vel || !b->act || !b->normsq || !b->lanes || !b->parts || !g->loss) return ND_ENOMEM;
  return 0;
}

void nd__builder_free(nd__builder *b) {
  free(b->param);
  free(b->store);
  free(b->grad);
  free(b->gsum);
  free(b->mom);
  free(b->vel);
  for (int r = 0; b->act && r < b->nranks; r++) free(b->act[r]);
  free(b->act);
  free(b->normsq);
  free(b->lanes);
  free(b->parts);
  free(b->written);
  free(b->bf16_copy);
  free(b->chunk0);
  for (int k = 0; k < b->n_deferred; k++) free(b->deferred[k].acc); /* left by a failure */
  free(b->deferred);
}

void nd__add_stats(nd__builder *b) {
  nd_graph *g = b->g;
  nd_tensor stat = {
      .kind = ND_TENSOR_STAT, .dtype = ND_F64, .ndim = 1, .shape = {1}, .layer = -1, .slot = -1, .param = -1};
  for (int d = 0; d < g->dp; d++) {
    snprintf(stat.name, sizeof stat.name, "d%d.loss", d);
    stat.home = nd__rank(d, g->pp - 1, 0);
    g->loss[d] = nd__add_tensor(b, &stat);
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++) {
        snprintf(stat.name, sizeof stat.name, "d%dp%dt%d.grad_normsq", d, s, t);
        stat.home = nd__rank(d, s, t);
        b->normsq[nd_rank_index(g, stat.home)] = nd__add_tensor(b, &stat);
      }
  }
  g->grad_normsq = b->normsq[nd_rank_index(g, nd__rank(0, 0, 0))];
  /* sharded gradients: 8 partial sums per gradient the norm counts, handed
   * along the first shard group (graph/optim.c) */
  if (g->dp_shard < ND_DP_SHARD_GRADIENTS) return;
  for (int s = 0; s < g->pp; s++)
    for (int t = 0; t < g->tp; t++) {
      int counted = 0;
      for (int p = 0; p < b->nparams; p++) {
        int32_t gr = nd__grad_sum(b, nd__rank(0, s, t), p);
        counted += gr >= 0 && g->tensors[gr].primary;
      }
      for (int d = 0; d < g->shard_size && counted; d++) {
        snprintf(stat.name, sizeof stat.name, "d%dp%dt%d.grad_lanes", d, s, t);
        stat.home = nd__rank(d, s, t);
        stat.shape[0] = 8 * counted;
        b->lanes[nd_rank_index(g, stat.home)] = nd__add_tensor(b, &stat);
      }
    }
}

