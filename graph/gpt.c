/* The GPT-2 model family of the step builder (graph/model.h).
 *
 * Tensor parallelism is Megatron's: attention split by heads, the MLP's first
 * matrix by columns and its second by rows, an all-reduce after each
 * row-parallel product (forward) and after each column-parallel input gradient
 * (backward); LayerNorms and residual adds are repeated on every tensor rank.
 * The embedding and the tied LM head are split by vocabulary rows, with a
 * vocabulary-parallel cross-entropy. */
#include <stdio.h>
#include <string.h>

#include "graph/emit.h"
#include "graph/model.h"

/* Parameters of a rank, by their place in the model. */
enum { P_WTE, P_WPE, P_LNF_W, P_LNF_B, P_LAYER0 };
enum {
  L_LN1_W,
  L_LN1_B,
  L_QKV_W,
  L_QKV_B,
  L_ATTPROJ_W,
  L_ATTPROJ_B,
  L_LN2_W,
  L_LN2_B,
  L_FC_W,
  L_FC_B,
  L_MLPPROJ_W,
  L_MLPPROJ_B,
  L_NPARAMS
};
static const char *const layer_param_names[L_NPARAMS] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};

/* Activations of a block, per micro-batch slot (a stage's own are graph/state.h's). */
enum act {
  A_LN1,
  A_LN1_MEAN,
  A_LN1_RSTD,
  A_QKV,
  A_ATT_LSE,
  A_ATTY,
  A_ATTPROJ,
  A_RES2,
  A_LN2,
  A_LN2_MEAN,
  A_LN2_RSTD,
  A_FCH,
  A_FCH_ACT,
  A_FCPROJ,
  A_XOUT,
  A_D_XOUT,
  A_D_RES2,
  A_D_FCH_ACT,
  A_D_FCH,
  A_D_LN2,
  A_D_ATTY,
  A_D_QKV,
  A_D_LN1,
  A_RING_OUT, /* context parallelism: another rank's block, before its merge */
  A_RING_LSE,
  A_RING_DKV, /* its keys' and values' gradient, before it goes back */
  A_COUNT
};
/* name, pool (by the last phase that reads it), shape (graph/state.h) */
static const nd__act_row act_rows[A_COUNT] = {
    [A_LN1] = {"ln1", ND_POOL_FWD_W, ND__ACT_HIDDEN, .gemm_in = 1},
    [A_LN1_MEAN] = {"ln1_mean", ND_POOL_FWD_B, ND__ACT_ROW},
    [A_LN1_RSTD] = {"ln1_rstd", ND_POOL_FWD_B, ND__ACT_ROW},
    [A_QKV] = {"qkv", ND_POOL_FWD_B, ND__ACT_SPLIT, .mult = 3, .width = ND__WIDTH_C},
    [A_ATT_LSE] = {"att_lse", ND_POOL_FWD_B, ND__ACT_HEAD_ROW},
    [A_ATTY] = {"atty", ND_POOL_FWD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_ATTPROJ] = {"attproj", ND_POOL_FWD_SCRATCH, ND__ACT_HIDDEN},
    [A_RES2] = {"res2", ND_POOL_FWD_B, ND__ACT_HIDDEN},
    [A_LN2] = {"ln2", ND_POOL_FWD_W, ND__ACT_HIDDEN, .gemm_in = 1},
    [A_LN2_MEAN] = {"ln2_mean", ND_POOL_FWD_B, ND__ACT_ROW},
    [A_LN2_RSTD] = {"ln2_rstd", ND_POOL_FWD_B, ND__ACT_ROW},
    [A_FCH] = {"fch", ND_POOL_FWD_B, ND__ACT_SPLIT, .mult = 4, .width = ND__WIDTH_C},
    [A_FCH_ACT] = {"fch_act", ND_POOL_FWD_W, ND__ACT_SPLIT, .mult = 4, .width = ND__WIDTH_C, .gemm_in = 1},
    [A_FCPROJ] = {"fcproj", ND_POOL_FWD_SCRATCH, ND__ACT_HIDDEN},
    [A_XOUT] = {"xout", ND_POOL_FWD_B, ND__ACT_HIDDEN},
    [A_D_XOUT] = {"d_xout", ND_POOL_GRAD_W, ND__ACT_HIDDEN},
    [A_D_RES2] = {"d_res2", ND_POOL_GRAD_W, ND__ACT_HIDDEN},
    [A_D_FCH_ACT] = {"d_fch_act", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 4, .width = ND__WIDTH_C},
    [A_D_FCH] = {"d_fch", ND_POOL_GRAD_W, ND__ACT_SPLIT, .mult = 4, .width = ND__WIDTH_C},
    [A_D_LN2] = {"d_ln2", ND_POOL_GRAD_B, ND__ACT_HIDDEN},
    [A_D_ATTY] = {"d_atty", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_D_QKV] = {"d_qkv", ND_POOL_GRAD_W, ND__ACT_SPLIT, .mult = 3, .width = ND__WIDTH_C},
    [A_D_LN1] = {"d_ln1", ND_POOL_GRAD_B, ND__ACT_HIDDEN},
    [A_RING_OUT] = {"ring_out", ND_POOL_FWD_SCRATCH, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C, .layers_share = 1},
    [A_RING_LSE] = {"ring_lse", ND_POOL_FWD_SCRATCH, ND__ACT_HEAD_ROW, .layers_share = 1},
    [A_RING_DKV] = {"ring_dkv", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 3, .width = ND__WIDTH_C, .layers_share = 1},
};

#define R nd__rank
static int32_t P(nd__builder *b, nd_rank r, int p) { return nd__param(b, r, p); }
static int32_t G(nd__builder *b, nd_rank r, int p) { return nd__grad(b, r, p); }
static int32_t A(nd__builder *b, nd_rank r, int mb, int layer, enum act which) {
  return nd__act(b, r, mb, layer, which);
}
static int LP(int l, int j) { return P_LAYER0 + L_NPARAMS * l + j; }

/* ------------------------------------------------------------ parameters */

static int nparams(const nd_graph *g) { return P_LAYER0 + L_NPARAMS * g->L; }

static void param(nd__builder *b, nd_rank r, int p, const char *hf, enum nd_shard shard, int64_t d0, int64_t d1,
                  int64_t full0, int64_t full1, int primary, int decay, int64_t shard_begin, int layer) {
  nd__param_spec spec = {hf, shard, d1 ? 2 : 1, {d0, d1}, {full0, full1}, primary, decay, shard_begin, layer};
  nd__add_param(b, r, p, &spec);
}

static void add_rank_params(nd__builder *b, nd_rank r) {
  nd_graph *g = b->g;
  int C = g->C, tp = g->tp, Cs = C / tp, H4s = 4 * C / tp, t = r.tp;
  int first = r.pp == 0, last = r.pp == g->pp - 1;
  int main_copy = r.dp == 0; /* data-parallel replicas hold the same values */
  char hf[48];
  if (first || last) {
    /* the tied embedding: on the last stage of a pipeline it is a copy */
    param(b, r, P_WTE, "wte.weight", ND_SHARD_VOCAB, nd__vocab_size(g, t), C, g->V, C, main_copy && first, 1,
          nd__vocab_begin(g, t), -1);
  }
  int positions = g->T * g->cp; /* every rank holds the whole table */
  if (first && t == 0)
    param(b, r, P_WPE, "wpe.weight", ND_SHARD_FULL, positions, C, positions, C, main_copy, 1, 0, -1);
  if (last) {
    param(b, r, P_LNF_W, "ln_f.weight", ND_SHARD_FULL, C, 0, C, 0, main_copy && t == 0, 0, 0, -1);
    param(b, r, P_LNF_B, "ln_f.bias", ND_SHARD_FULL, C, 0, C, 0, main_copy && t == 0, 0, 0, -1);
  }
  for (int l = g->stage_first[r.pp]; l < g->stage_first[r.pp] + g->stage_layers[r.pp]; l++) {
    int base = P_LAYER0 + L_NPARAMS * l;
    for (int j = 0; j < L_NPARAMS; j++) {
      snprintf(hf, sizeof hf, "h.%d.%s", l, layer_param_names[j]);
      int is_ln = j == L_LN1_W || j == L_LN1_B || j == L_LN2_W || j == L_LN2_B;
      int row_bias = j == L_ATTPROJ_B || j == L_MLPPROJ_B;
      if (row_bias && t != 0) continue; /* added once, after the row-parallel sum */
      switch (j) {
      case L_QKV_W:
        param(b, r, base + j, hf, ND_SHARD_QKV_COLS, C, 3 * Cs, C, 3 * C, main_copy, 1, 0, l);
        break;
      case L_QKV_B:
        param(b, r, base + j, hf, ND_SHARD_QKV_COLS, 3 * Cs, 0, 3 * C, 0, main_copy, 0, 0, l);
        break;
      case L_ATTPROJ_W:
        param(b, r, base + j, hf, ND_SHARD_ROWS, Cs, C, C, C, main_copy, 1, 0, l);
        break;
      case L_FC_W:
        param(b, r, base + j, hf, ND_SHARD_COLS, C, H4s, C, 4 * C, main_copy, 1, 0, l);
        break;
      case L_FC_B:
        param(b, r, base + j, hf, ND_SHARD_COLS, H4s, 0, 4 * C, 0, main_copy, 0, 0, l);
        break;
      case L_MLPPROJ_W:
        param(b, r, base + j, hf, ND_SHARD_ROWS, H4s, C, 4 * C, C, main_copy, 1, 0, l);
        break;
      default: /* LayerNorms and the row-parallel biases: whole vectors */
        param(b, r, base + j, hf, ND_SHARD_FULL, C, 0, C, 0, main_copy && (!is_ln || t == 0), 0, 0, l);
      }
    }
  }
}

static const nd__act_set acts = {
    .count = A_COUNT, .rows = act_rows, .xout = A_XOUT, .d_xout = A_D_XOUT, .lnf_mean = 1, .attn_saved = A_ATT_LSE};

/* ------------------------------------------------------------ forward */

static void attention_forward(nd__builder *b, nd_rank r, int mb, int l) {
  nd_graph *g = b->g;
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_ATTN_FWD, ND_PHASE_F, r, mb, l);
  s.t.a.attn = (struct nd_attn_args){g->B, g->T, g->NH / g->tp, g->C / g->NH};
  nd__acc(&s, A(b, r, mb, l, A_ATTY), ND_ACCESS_W);
  nd__acc(&s, A(b, r, mb, l, A_ATT_LSE), ND_ACCESS_W);
  nd__acc(&s, A(b, r, mb, l, A_QKV), ND_ACCESS_R);
  nd__emit(b, &s);
  if (g->cp == 1) return;
  int32_t qkv[ND_MAX_CONTEXT];
  for (int c = 0; c < g->cp; c++) qkv[c] = A(b, R(r.dp - r.dp % g->cp + c, r.pp, r.tp), mb, l, A_QKV);
  nd__ring_attention_fwd(b, r, mb, l, A(b, r, mb, l, A_ATTY), A(b, r, mb, l, A_ATT_LSE), &(nd__ring_qkv){qkv, 0, 0},
                         A(b, r, mb, l, A_RING_OUT), A(b, r, mb, l, A_RING_LSE));
}

/* The attention of rank r and its output projection. */
static void attention_block(nd__builder *b, nd_rank r, int mb, int l) {
  nd_graph *g = b->g;
  int BT = g->B * g->T, C = g->C, Cs = C / g->tp;
  if (g->gen_cache) {
    int32_t qkv = A(b, r, mb, l, A_QKV);
    nd__gen_attention(b, r, l, A(b, r, mb, l, A_ATTY), &qkv, 1, NULL, g->NH);
  } else {
    attention_forward(b, r, mb, l);
  }
  nd__matmul_fwd(b, r, mb, l,
                 &(nd__linear){.out = A(b, r, mb, l, A_ATTPROJ),
                               .inp = A(b, r, mb, l, A_ATTY),
                               .w = P(b, r, LP(l, L_ATTPROJ_W)),
                               .bias = r.tp == 0 ? P(b, r, LP(l, L_ATTPROJ_B)) : -1,
                               .M = BT,
                               .K = Cs,
                               .N = C});
}

static void layer_forward(nd__builder *b, int d, int st, int mb, int l) {
  nd_graph *g = b->g;
  int BT = g->B * g->T, C = g->C, Cs = C / g->tp, H4s = 4 * Cs;
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t x = nd__layer_input(b, r, mb, l);
    nd__norm_fwd(b, ND__LAYERNORM, r, mb, l,
                 &(nd__norm){.out = A(b, r, mb, l, A_LN1),
                             .mean = A(b, r, mb, l, A_LN1_MEAN),
                             .rstd = A(b, r, mb, l, A_LN1_RSTD),
                             .inp = x,
                             .w = P(b, r, LP(l, L_LN1_W)),
                             .bias = P(b, r, LP(l, L_LN1_B))});
    nd__matmul_fwd(b, r, mb, l,
                   &(nd__linear){.out = A(b, r, mb, l, A_QKV),
                                 .inp = A(b, r, mb, l, A_LN1),
                                 .w = P(b, r, LP(l, L_QKV_W)),
                                 .bias = P(b, r, LP(l, L_QKV_B)),
                                 .M = BT,
                                 .K = C,
                                 .N = 3 * Cs});
    if (g->cp == 1) attention_block(b, r, mb, l);
  }
  /* context ranks: every rank's keys and values first, then the ring */
  for (int i = 0; g->cp > 1 && i < nd__group_size(g); i++) attention_block(b, nd__group_rank(g, d, st, i), mb, l);
  nd__allreduce_tp(b, d, st, l, A_ATTPROJ, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t x = nd__layer_input(b, r, mb, l);
    int32_t res2 = A(b, r, mb, l, A_RES2);
    nd__elementwise(b, ND_TASK_RESIDUAL_FWD, ND_PHASE_F, r, mb, l, res2, x, A(b, r, mb, l, A_ATTPROJ), r.tp > 0);
    nd__norm_fwd(b, ND__LAYERNORM, r, mb, l,
                 &(nd__norm){.out = A(b, r, mb, l, A_LN2),
                             .mean = A(b, r, mb, l, A_LN2_MEAN),
                             .rstd = A(b, r, mb, l, A_LN2_RSTD),
                             .inp = res2,
                             .w = P(b, r, LP(l, L_LN2_W)),
                             .bias = P(b, r, LP(l, L_LN2_B))});
    nd__matmul_fwd(b, r, mb, l,
                   &(nd__linear){.out = A(b, r, mb, l, A_FCH),
                                 .inp = A(b, r, mb, l, A_LN2),
                                 .w = P(b, r, LP(l, L_FC_W)),
                                 .bias = P(b, r, LP(l, L_FC_B)),
                                 .M = BT,
                                 .K = C,
                                 .N = H4s});
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_ACT_FWD, ND_PHASE_F, r, mb, l);
    s.t.a.ew.n = (int64_t)BT * H4s;
    nd__acc(&s, A(b, r, mb, l, A_FCH_ACT), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_FCH), ND_ACCESS_R);
    nd__emit(b, &s);
    if (b->recomputing) continue; /* what follows makes the block's output alone: kept */
    nd__matmul_fwd(b, r, mb, l,
                   &(nd__linear){.out = A(b, r, mb, l, A_FCPROJ),
                                 .inp = A(b, r, mb, l, A_FCH_ACT),
                                 .w = P(b, r, LP(l, L_MLPPROJ_W)),
                                 .bias = r.tp == 0 ? P(b, r, LP(l, L_MLPPROJ_B)) : -1,
                                 .M = BT,
                                 .K = H4s,
                                 .N = C});
  }
  if (b->recomputing) return;
  nd__allreduce_tp(b, d, st, l, A_FCPROJ, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t xout = A(b, r, mb, l, A_XOUT);
    nd__elementwise(b, ND_TASK_RESIDUAL_FWD, ND_PHASE_F, r, mb, l, xout, A(b, r, mb, l, A_RES2),
                    A(b, r, mb, l, A_FCPROJ), r.tp > 0);
  }
}

/* ------------------------------------------------------------ backward */

/* The qkv projection's backward, once rank r's dqkv is complete. */
static void qkv_backward(nd__builder *b, nd_rank r, int mb, int l) {
  nd_graph *g = b->g;
  nd__matmul_bwd(b, r, mb, l,
                 &(nd__linear){.dinp = A(b, r, mb, l, A_D_LN1),
                               .dout = A(b, r, mb, l, A_D_QKV),
                               .inp = A(b, r, mb, l, A_LN1),
                               .w = P(b, r, LP(l, L_QKV_W)),
                               .dw = G(b, r, LP(l, L_QKV_W)),
                               .dbias = G(b, r, LP(l, L_QKV_B)),
                               .M = g->B * g->T,
                               .K = g->C,
                               .N = 3 * (g->C / g->tp)});
}

static void layer_backward(nd__builder *b, int d, int st, int mb, int l) {
  nd_graph *g = b->g;
  int BT = g->B * g->T, C = g->C, Cs = C / g->tp, H4s = 4 * Cs;
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t dxo = A(b, r, mb, l, A_D_XOUT);
    nd__matmul_bwd(b, r, mb, l,
                   &(nd__linear){.dinp = A(b, r, mb, l, A_D_FCH_ACT),
                                 .dout = dxo,
                                 .inp = A(b, r, mb, l, A_FCH_ACT),
                                 .w = P(b, r, LP(l, L_MLPPROJ_W)),
                                 .dw = G(b, r, LP(l, L_MLPPROJ_W)),
                                 .dbias = r.tp == 0 ? G(b, r, LP(l, L_MLPPROJ_B)) : -1,
                                 .M = BT,
                                 .K = H4s,
                                 .N = C});
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_ACT_BWD, ND_PHASE_B, r, mb, l);
    s.t.a.ew.n = (int64_t)BT * H4s;
    nd__acc(&s, A(b, r, mb, l, A_D_FCH), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_FCH), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_D_FCH_ACT), ND_ACCESS_R);
    nd__emit(b, &s);
    nd__matmul_bwd(b, r, mb, l,
                   &(nd__linear){.dinp = A(b, r, mb, l, A_D_LN2),
                                 .dout = A(b, r, mb, l, A_D_FCH),
                                 .inp = A(b, r, mb, l, A_LN2),
                                 .w = P(b, r, LP(l, L_FC_W)),
                                 .dw = G(b, r, LP(l, L_FC_W)),
                                 .dbias = G(b, r, LP(l, L_FC_B)),
                                 .M = BT,
                                 .K = C,
                                 .N = H4s});
  }
  nd__allreduce_tp(b, d, st, l, A_D_LN2, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    nd__norm_bwd(b, ND__LAYERNORM, r, mb, l,
                 &(nd__norm){.dinp = A(b, r, mb, l, A_D_RES2),
                             .dskip = A(b, r, mb, l, A_D_XOUT),
                             .dout = A(b, r, mb, l, A_D_LN2),
                             .inp = A(b, r, mb, l, A_RES2),
                             .w = P(b, r, LP(l, L_LN2_W)),
                             .mean = A(b, r, mb, l, A_LN2_MEAN),
                             .rstd = A(b, r, mb, l, A_LN2_RSTD),
                             .dw = G(b, r, LP(l, L_LN2_W)),
                             .dbias = G(b, r, LP(l, L_LN2_B))});
    nd__matmul_bwd(b, r, mb, l,
                   &(nd__linear){.dinp = A(b, r, mb, l, A_D_ATTY),
                                 .dout = A(b, r, mb, l, A_D_RES2),
                                 .inp = A(b, r, mb, l, A_ATTY),
                                 .w = P(b, r, LP(l, L_ATTPROJ_W)),
                                 .dw = G(b, r, LP(l, L_ATTPROJ_W)),
                                 .dbias = r.tp == 0 ? G(b, r, LP(l, L_ATTPROJ_B)) : -1,
                                 .M = BT,
                                 .K = Cs,
                                 .N = C});
    if (b->recompute == ND_RECOMPUTE_ATTENTION) {
      b->recomputing = 1;
      attention_forward(b, r, mb, l);
      b->recomputing = 0;
    }
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_ATTN_BWD, ND_PHASE_B, r, mb, l);
    s.t.a.attn = (struct nd_attn_args){g->B, g->T, g->NH / g->tp, C / g->NH};
    nd__acc(&s, A(b, r, mb, l, A_D_QKV), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_D_ATTY), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_QKV), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_ATTY), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_ATT_LSE), ND_ACCESS_R);
    nd__emit(b, &s);
    if (g->cp == 1) qkv_backward(b, r, mb, l);
  }
  if (g->cp > 1) {
    /* every rank's own block wrote its dqkv: then the ring's blocks, query
     * rank by query rank, each adding to the keys' owner in that order */
    for (int t = 0; t < g->tp; t++) {
      int32_t qkv[ND_MAX_CONTEXT], dqkv[ND_MAX_CONTEXT];
      for (int c = 0; c < g->cp; c++) {
        nd_rank rc = R(d * g->cp + c, st, t);
        qkv[c] = A(b, rc, mb, l, A_QKV);
        dqkv[c] = A(b, rc, mb, l, A_D_QKV);
      }
      for (int c = 0; c < g->cp; c++) {
        nd_rank r = R(d * g->cp + c, st, t);
        for (int kr = 0; kr < g->cp; kr++)
          if (kr != c)
            nd__ring_attention_bwd(b, r, kr, mb, l, &(nd__ring_qkv){dqkv, 0, 0}, A(b, r, mb, l, A_D_ATTY),
                                   &(nd__ring_qkv){qkv, 0, 0}, A(b, r, mb, l, A_ATTY), A(b, r, mb, l, A_ATT_LSE),
                                   A(b, r, mb, l, A_RING_DKV), -1);
      }
    }
    for (int i = 0; i < nd__group_size(g); i++) qkv_backward(b, nd__group_rank(g, d, st, i), mb, l);
  }
  nd__allreduce_tp(b, d, st, l, A_D_LN1, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t x = nd__layer_input(b, r, mb, l);
    int32_t dx = nd__layer_input_grad(b, r, mb, l);
    nd__norm_bwd(b, ND__LAYERNORM, r, mb, l,
                 &(nd__norm){.dinp = dx,
                             .dskip = A(b, r, mb, l, A_D_RES2),
                             .dout = A(b, r, mb, l, A_D_LN1),
                             .inp = x,
                             .w = P(b, r, LP(l, L_LN1_W)),
                             .mean = A(b, r, mb, l, A_LN1_MEAN),
                             .rstd = A(b, r, mb, l, A_LN1_RSTD),
                             .dw = G(b, r, LP(l, L_LN1_W)),
                             .dbias = G(b, r, LP(l, L_LN1_B))});
  }
}

const nd__model nd__gpt2_model = {.acts = &acts,
                                  .nparams = nparams,
                                  .add_rank_params = add_rank_params,
                                  .layer_forward = layer_forward,
                                  .layer_backward = layer_backward,
                                  .norm = ND__LAYERNORM,
                                  .embed = P_WTE,
                                  .pos_embed = P_WPE,
                                  .norm_w = P_LNF_W,
                                  .norm_b = P_LNF_B,
                                  .head = P_WTE};

int64_t nd_gpt_param_order(const char *hf_name) {
  if (strncmp(hf_name, "model.", 6) == 0 || strcmp(hf_name, "lm_head.weight") == 0)
    return nd__llama_param_order(hf_name);
  if (strcmp(hf_name, "wte.weight") == 0) return 0;
  if (strcmp(hf_name, "wpe.weight") == 0) return 1;
  int layer, used = 0;
  if (sscanf(hf_name, "h.%d.%n", &layer, &used) == 1 && used > 0)
    for (int j = 0; j < L_NPARAMS; j++)
      if (strcmp(hf_name + used, layer_param_names[j]) == 0) return 2 + (int64_t)layer * L_NPARAMS + j;
  if (strcmp(hf_name, "ln_f.weight") == 0) return INT64_MAX - 1;
  return INT64_MAX;
}
