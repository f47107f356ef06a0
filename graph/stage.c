/* The parts of a pipeline stage every model family shares (graph/model.h):
 * loading the batch, the embedding and the hand-over between stages, the
 * final norm, the LM head (vocabulary-parallel, weights stored [vocab, C])
 * and the loss, and their gradients. A family brings its blocks and the
 * indices of its activations and parameters. */
#include "graph/model.h"
#include "graph/gather.h"
#include "graph/gradbuf.h"

#define A nd__act
#define S nd__stage_act
#define R nd__rank

static int32_t head_weight(const nd__model *m, const nd_graph *g) { return g->tied ? m->embed : m->head; }

static void head_forward(nd__builder *b, const nd__model *m, int d, int mb) {
  nd_graph *g = b->g;
  const nd__act_set *a = m->acts;
  int st = g->pp - 1, L = g->L;
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    nd__norm_fwd(b, m->norm, r, mb, L,
                 &(nd__norm){.out = S(b, r, mb, ND__A_LNF),
                             .mean = a->lnf_mean ? S(b, r, mb, ND__A_LNF_MEAN) : -1,
                             .rstd = S(b, r, mb, ND__A_LNF_RSTD),
                             .inp = A(b, r, mb, L - 1, a->xout),
                             .w = nd__param(b, r, m->norm_w),
                             .bias = m->norm_b >= 0 ? nd__param(b, r, m->norm_b) : -1});
    nd__matmul_fwd(b, r, mb, L,
                   &(nd__linear){.out = S(b, r, mb, ND__A_LOGITS),
                                 .inp = S(b, r, mb, ND__A_LNF),
                                 .w = nd__param(b, r, head_weight(m, g)),
                                 .bias = -1,
                                 .M = g->B * g->T,
                                 .K = g->C,
                                 .N = nd__vocab_size(g, r.tp),
                                 .trans_w = 1});
    if (!g->gen_cache) nd__ce_stats(b, r, mb); /* generation reads the logits */
  }
  if (g->gen_cache) return;
  for (int c = 0; c < g->cp; c++) {
    if (!g->forward_only) nd__ce_lse(b, d * g->cp + c, mb);
    nd__ce_combine(b, d * g->cp + c, mb);
  }
}

static void head_backward(nd__builder *b, const nd__model *m, int d, int mb) {
  nd_graph *g = b->g;
  const nd__act_set *a = m->acts;
  int st = g->pp - 1, L = g->L, head = head_weight(m, g);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    nd__ce_bwd(b, r, mb);
    nd__matmul_bwd(b, r, mb, L,
                   &(nd__linear){.dinp = S(b, r, mb, ND__A_D_LNF),
                                 .dout = S(b, r, mb, ND__A_LOGITS),
                                 .inp = S(b, r, mb, ND__A_LNF),
                                 .w = nd__param(b, r, head),
                                 .dw = nd__grad(b, r, head),
                                 .dbias = -1,
                                 .M = g->B * g->T,
                                 .K = g->C,
                                 .N = nd__vocab_size(g, r.tp),
                                 .trans_w = 1});
  }
  nd__allreduce_tp(b, d, st, L, a->count + ND__A_D_LNF, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    nd__norm_bwd(b, m->norm, r, mb, L,
                 &(nd__norm){.dinp = A(b, r, mb, L - 1, a->d_xout),
                             .dskip = -1,
                             .dout = S(b, r, mb, ND__A_D_LNF),
                             .inp = A(b, r, mb, L - 1, a->xout),
                             .w = nd__param(b, r, m->norm_w),
                             .mean = a->lnf_mean ? S(b, r, mb, ND__A_LNF_MEAN) : -1,
                             .rstd = S(b, r, mb, ND__A_LNF_RSTD),
                             .dw = nd__grad(b, r, m->norm_w),
                             .dbias = m->norm_b >= 0 ? nd__grad(b, r, m->norm_b) : -1});
  }
}

/* Replica d's hand-over across a pipeline boundary, src[t] on one stage to
 * dst[t] on stage `to`, one per tensor rank. With tp 1 (or a tensor-parallel
 * group that may straddle processes) each rank sends its whole copy. Else
 * the ranks' copies are the same bits (they follow a tensor-parallel
 * all-reduce), so rank t sends only its slice t to rank t's `part` and the
 * receiving ranks all-gather the slices: 1/tp of the bytes cross the
 * boundary, the gather stays in the receiving stage's process. */
static void hand_over(nd__builder *b, enum nd_group group, int d, int to, const int32_t *src, const int32_t *dst,
                      int part, int mb, int layer) {
  nd_graph *g = b->g;
  if (g->tp == 1 || g->split_tp) {
    for (int t = 0; t < g->tp; t++) nd__sendrecv(b, group, src[t], 0, dst[t], mb, layer);
    return;
  }
  int32_t parts[g->tp];
  for (int t = 0; t < g->tp; t++) {
    parts[t] = S(b, R(d, to, t), mb, part);
    nd__sendrecv(b, group, src[t], nd__slice_begin(g, t), parts[t], mb, layer);
  }
  nd__allgather(b, parts, dst, g->tp, mb, layer);
}

/* The position table lives on the first stage's tensor rank 0 only. */
static int has_pos(const nd__model *m, nd_rank r) { return m->pos_embed >= 0 && r.tp == 0; }

void nd__stage_forward(nd__builder *b, const nd__model *m, int d, int st, int mb) {
  nd_graph *g = b->g;
  const nd__act_set *a = m->acts;
  int first = g->stage_first[st];
  if (st == 0) {
    for (int i = 0; i < nd__group_size(g); i++) {
      nd_rank r = nd__group_rank(g, d, 0, i);
      int32_t tok = S(b, r, mb, ND__A_TOKENS), tgt = g->pp == 1 && !g->gen_cache ? S(b, r, mb, ND__A_TARGETS) : -1;
      nd__load_batch(b, r, mb, tok, tgt);
    }
    for (int i = 0; i < nd__group_size(g); i++) {
      nd_rank r = nd__group_rank(g, d, 0, i);
      /* generation adds the positions of its submission apart */
      int32_t wpe = has_pos(m, r) ? nd__param(b, r, m->pos_embed) : -1;
      nd__embed_fwd(b, r, mb, S(b, r, mb, ND__A_XIN), S(b, r, mb, ND__A_TOKENS), nd__param(b, r, m->embed),
                    g->gen_cache || g->cp > 1 ? -1 : wpe);
      if (g->cp > 1 && wpe >= 0) nd__ring_pos_fwd(b, r, mb, S(b, r, mb, ND__A_XIN), wpe);
      if (g->gen_cache && wpe >= 0) nd__gen_positions(b, r, S(b, r, mb, ND__A_XIN), wpe);
    }
    nd__allreduce_tp(b, d, 0, first, a->count + ND__A_XIN, mb);
  } else {
    for (int c = 0; c < g->cp; c++) { /* each context rank's tensor group */
      int dc = d * g->cp + c;
      int32_t src[g->tp], dst[g->tp];
      for (int t = 0; t < g->tp; t++) {
        src[t] = A(b, R(dc, st - 1, t), mb, first - 1, a->xout);
        dst[t] = S(b, R(dc, st, t), mb, ND__A_XIN);
      }
      hand_over(b, ND_GROUP_PP_NEXT, dc, st, src, dst, ND__A_XIN_PART, mb, first);
    }
  }
  if (st == g->pp - 1 && g->pp > 1)
    for (int i = 0; i < nd__group_size(g); i++) {
      nd_rank r = nd__group_rank(g, d, st, i);
      nd__load_batch(b, r, mb, -1, S(b, r, mb, ND__A_TARGETS));
    }
  for (int l = first; l < first + g->stage_layers[st]; l++) {
    nd__gather_block(b, d, st, mb, l);
    m->layer_forward(b, d, st, mb, l);
  }
  if (st == g->pp - 1) head_forward(b, m, d, mb);
}

/* Block l's backward; under train.recompute: layer, first its forward again
 * from its kept input into the buffers all blocks share (the family skips
 * what only makes the block's output, kept too). Its W tasks then follow its
 * B instead of waiting: the next block's recomputation overwrites what they
 * read. */
static void block_backward(nd__builder *b, const nd__model *m, int d, int st, int mb, int l) {
  nd__gather_block(b, d, st, mb, l);
  if (b->recompute != ND_RECOMPUTE_LAYER) {
    m->layer_backward(b, d, st, mb, l);
    return;
  }
  int defer = b->defer_w;
  b->recomputing = 1;
  m->layer_forward(b, d, st, mb, l);
  b->recomputing = 0;
  b->defer_w = 0;
  m->layer_backward(b, d, st, mb, l);
  b->defer_w = defer;
}

/* Replica d's backward of stage st after its blocks. */
static void stage_backward_tail(nd__builder *b, const nd__model *m, int d, int st, int mb) {
  nd_graph *g = b->g;
  const nd__act_set *a = m->acts;
  int first = g->stage_first[st];
  if (st > 0) {
    for (int c = 0; c < g->cp; c++) {
      int dc = d * g->cp + c;
      int32_t src[g->tp], dst[g->tp];
      for (int t = 0; t < g->tp; t++) {
        src[t] = S(b, R(dc, st, t), mb, ND__A_D_XIN);
        dst[t] = A(b, R(dc, st - 1, t), mb, first - 1, a->d_xout);
      }
      hand_over(b, ND_GROUP_PP_PREV, dc, st - 1, src, dst, ND__A_D_XOUT_PART, mb, first);
    }
    return;
  }
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, 0, i);
    int32_t dwpe = has_pos(m, r) ? nd__grad(b, r, m->pos_embed) : -1;
    nd__embed_bwd(b, r, mb, nd__grad(b, r, m->embed), g->cp > 1 ? -1 : dwpe, S(b, r, mb, ND__A_D_XIN),
                  S(b, r, mb, ND__A_TOKENS));
    if (g->cp > 1 && dwpe >= 0) nd__ring_pos_bwd(b, r, mb, dwpe, S(b, r, mb, ND__A_D_XIN));
  }
}

/* Block by block, each block on every replica before the next block: after
 * the step's last micro-batch a block's gradients are complete on every
 * replica at once, and their reduce-scatter comes before the next block of
 * their pool slot writes them (graph/gradbuf.h). */
void nd__stage_backward(nd__builder *b, const nd__model *m, const uint8_t *on, int st, int mb) {
  nd_graph *g = b->g;
  int first = g->stage_first[st];
  for (int d = 0; d < g->dp / g->cp; d++)
    if (on[d] && st == g->pp - 1) head_backward(b, m, d, mb);
  for (int l = first + g->stage_layers[st] - 1; l >= first; l--) {
    for (int d = 0; d < g->dp / g->cp; d++)
      if (on[d]) block_backward(b, m, d, st, mb, l);
    nd__reduce_block(b, st, mb, l);
  }
  for (int d = 0; d < g->dp / g->cp; d++)
    if (on[d]) stage_backward_tail(b, m, d, st, mb);
}
