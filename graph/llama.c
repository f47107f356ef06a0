/* The Llama model family of the step builder (graph/model.h): RMSNorm, rotary
 * position embeddings on q and k, grouped-query attention, a gated SiLU MLP,
 * no biases, an untied LM head unless model.tie_word_embeddings.
 *
 * Linear weights are stored [out, in] as Hugging Face does (trans_w). Tensor
 * parallelism is Megatron's for Llama: q, k, v, gate and up column-parallel
 * (rows of the [out, in] weight: whole heads, intermediate columns), o and
 * down row-parallel with an all-reduce after them; the norms and residual
 * adds are repeated on every tensor rank. Embedding and head are split by
 * vocabulary rows with the vocabulary-parallel cross-entropy. */
#include <stdio.h>
#include <string.h>

#include "graph/emit.h"
#include "graph/model.h"

enum { P_EMBED, P_NORM, P_HEAD, P_LAYER0 };
enum { L_IN_NORM, L_Q, L_K, L_V, L_O, L_POST_NORM, L_GATE, L_UP, L_DOWN, L_NPARAMS };
static const char *const layer_param_names[L_NPARAMS] = {
    "input_layernorm.weight",  "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",    "mlp.up_proj.weight",      "mlp.down_proj.weight"};

/* Activations of a block, per micro-batch slot (a stage's own are graph/state.h's). */
enum act {
  A_LN1,
  A_LN1_RSTD,
  A_Q,
  A_K,
  A_V,
  A_QR,
  A_KR,
  A_ATT_LSE,
  A_ATTY,
  A_ATTPROJ,
  A_RES2,
  A_LN2,
  A_LN2_RSTD,
  A_GATE,
  A_UP,
  A_H,
  A_DOWN,
  A_XOUT,
  A_D_XOUT,
  A_D_RES2,
  A_D_H,
  A_D_GATE,
  A_D_UP,
  A_D_LN2,
  A_D_ATTY,
  A_D_QR,
  A_D_KR,
  A_D_V,
  A_D_Q,
  A_D_K,
  A_D_LN1,
  A_RING_OUT, /* context parallelism: another rank's block, before its merge */
  A_RING_LSE,
  A_RING_DK, /* its keys' and values' gradients, before they go back */
  A_RING_DV,
  A_COUNT
};
/* name, pool (by the last phase that reads it), shape (graph/state.h) */
static const nd__act_row act_rows[A_COUNT] = {
    [A_LN1] = {"ln1", ND_POOL_FWD_W, ND__ACT_HIDDEN, .gemm_in = 1},
    [A_LN1_RSTD] = {"ln1_rstd", ND_POOL_FWD_B, ND__ACT_ROW},
    [A_Q] = {"q", ND_POOL_FWD_SCRATCH, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_K] = {"k", ND_POOL_FWD_SCRATCH, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV},
    [A_V] = {"v", ND_POOL_FWD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV},
    [A_QR] = {"q_rot", ND_POOL_FWD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_KR] = {"k_rot", ND_POOL_FWD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV},
    [A_ATT_LSE] = {"att_lse", ND_POOL_FWD_B, ND__ACT_HEAD_ROW},
    [A_ATTY] = {"atty", ND_POOL_FWD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_ATTPROJ] = {"attproj", ND_POOL_FWD_SCRATCH, ND__ACT_HIDDEN},
    [A_RES2] = {"res2", ND_POOL_FWD_B, ND__ACT_HIDDEN},
    [A_LN2] = {"ln2", ND_POOL_FWD_W, ND__ACT_HIDDEN, .gemm_in = 1},
    [A_LN2_RSTD] = {"ln2_rstd", ND_POOL_FWD_B, ND__ACT_ROW},
    [A_GATE] = {"gate", ND_POOL_FWD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_FF},
    [A_UP] = {"up", ND_POOL_FWD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_FF},
    [A_H] = {"h", ND_POOL_FWD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_FF, .gemm_in = 1},
    [A_DOWN] = {"down", ND_POOL_FWD_SCRATCH, ND__ACT_HIDDEN},
    [A_XOUT] = {"xout", ND_POOL_FWD_B, ND__ACT_HIDDEN},
    [A_D_XOUT] = {"d_xout", ND_POOL_GRAD_W, ND__ACT_HIDDEN},
    [A_D_RES2] = {"d_res2", ND_POOL_GRAD_W, ND__ACT_HIDDEN},
    [A_D_H] = {"d_h", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_FF},
    [A_D_GATE] = {"d_gate", ND_POOL_GRAD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_FF},
    [A_D_UP] = {"d_up", ND_POOL_GRAD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_FF},
    [A_D_LN2] = {"d_ln2", ND_POOL_GRAD_B, ND__ACT_HIDDEN},
    [A_D_ATTY] = {"d_atty", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_D_QR] = {"d_q_rot", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_D_KR] = {"d_k_rot", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV},
    [A_D_V] = {"d_v", ND_POOL_GRAD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV},
    [A_D_Q] = {"d_q", ND_POOL_GRAD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C},
    [A_D_K] = {"d_k", ND_POOL_GRAD_W, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV},
    [A_D_LN1] = {"d_ln1", ND_POOL_GRAD_B, ND__ACT_HIDDEN},
    [A_RING_OUT] = {"ring_out", ND_POOL_FWD_SCRATCH, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_C, .layers_share = 1},
    [A_RING_LSE] = {"ring_lse", ND_POOL_FWD_SCRATCH, ND__ACT_HEAD_ROW, .layers_share = 1},
    [A_RING_DK] = {"ring_dk", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV, .layers_share = 1},
    [A_RING_DV] = {"ring_dv", ND_POOL_GRAD_B, ND__ACT_SPLIT, .mult = 1, .width = ND__WIDTH_KV, .layers_share = 1},
};

static const nd__act_set acts = {
    .count = A_COUNT, .rows = act_rows, .xout = A_XOUT, .d_xout = A_D_XOUT, .lnf_mean = 0, .attn_saved = A_ATT_LSE};

/* The sizes of one tensor rank. */
typedef struct dims {
  int BT, C, hs, NHs, KVs, Is; /* heads and MLP columns of one tensor rank */
} dims;

static dims dims_of(const nd_graph *g) {
  return (dims){g->B * g->T, g->C, g->C / g->NH, g->NH / g->tp, g->NKV / g->tp, g->FF / g->tp};
}

#define R nd__rank
static int32_t P(nd__builder *b, nd_rank r, int p) { return nd__param(b, r, p); }
static int32_t G(nd__builder *b, nd_rank r, int p) { return nd__grad(b, r, p); }
static int32_t A(nd__builder *b, nd_rank r, int mb, int layer, enum act which) {
  return nd__act(b, r, mb, layer, which);
}
static int LP(int l, int j) { return P_LAYER0 + L_NPARAMS * l + j; }
static int tied(const nd_graph *g) { return g->tied; }

/* ------------------------------------------------------------ parameters */

static int nparams(const nd_graph *g) { return P_LAYER0 + L_NPARAMS * g->L; }

static void add_rank_params(nd__builder *b, nd_rank r) {
  nd_graph *g = b->g;
  dims z = dims_of(g);
  int C = g->C, t = r.tp, first = r.pp == 0, last = r.pp == g->pp - 1;
  int main_copy = r.dp == 0; /* data-parallel replicas hold the same values */
  int64_t Vs = nd__vocab_size(g, t), v0 = nd__vocab_begin(g, t);
  char hf[80];
  if (first || (last && tied(g))) {
    /* tied: on the last stage of a pipeline it is a copy */
    nd__add_param(
        b, r, P_EMBED,
        &(nd__param_spec){
            "model.embed_tokens.weight", ND_SHARD_VOCAB, 2, {Vs, C}, {g->V, C}, main_copy && first, 1, v0, -1});
  }
  if (last) {
    nd__add_param(
        b, r, P_NORM,
        &(nd__param_spec){"model.norm.weight", ND_SHARD_FULL, 1, {C, 0}, {C, 0}, main_copy && t == 0, 0, 0, -1});
    if (!tied(g))
      nd__add_param(b, r, P_HEAD,
                    &(nd__param_spec){"lm_head.weight", ND_SHARD_VOCAB, 2, {Vs, C}, {g->V, C}, main_copy, 1, v0, -1});
  }
  int64_t KV = g->NKV;
  for (int l = g->stage_first[r.pp]; l < g->stage_first[r.pp] + g->stage_layers[r.pp]; l++) {
    for (int j = 0; j < L_NPARAMS; j++) {
      snprintf(hf, sizeof hf, "model.layers.%d.%s", l, layer_param_names[j]);
      nd__param_spec s = {hf, ND_SHARD_ROWS, 2, {0, C}, {0, C}, main_copy, 1, 0, l};
      switch (j) {
      case L_Q:
        s.shape[0] = (int64_t)z.NHs * z.hs, s.full[0] = (int64_t)g->NH * z.hs;
        break;
      case L_K:
      case L_V:
        s.shape[0] = (int64_t)z.KVs * z.hs, s.full[0] = KV * z.hs;
        break;
      case L_GATE:
      case L_UP:
        s.shape[0] = z.Is, s.full[0] = g->FF;
        break;
      case L_O:
        s = (nd__param_spec){hf, ND_SHARD_COLS, 2, {C, (int64_t)z.NHs * z.hs}, {C, C}, main_copy, 1, 0, l};
        break;
      case L_DOWN:
        s = (nd__param_spec){hf, ND_SHARD_COLS, 2, {C, z.Is}, {C, g->FF}, main_copy, 1, 0, l};
        break;
      default: /* the norms: whole vectors on every tensor rank */
        s = (nd__param_spec){hf, ND_SHARD_FULL, 1, {C, 0}, {C, 0}, main_copy && t == 0, 0, 0, l};
      }
      nd__add_param(b, r, LP(l, j), &s);
    }
  }
}

/* ------------------------------------------------------------ tasks of this family */

/* The RoPE of the configuration: theta and Llama 3's scaling (docs/models.md). */
static nd_rope rope_of(const nd_config *c) {
  return (nd_rope){(float)c->model.rope_theta, (float)c->model.rope_factor, (float)c->model.rope_low_freq_factor,
                   (float)c->model.rope_high_freq_factor, (float)c->model.rope_original_context};
}

static void rope(nd__builder *b, enum nd_task_kind kind, enum nd_phase ph, nd_rank r, int mb, int l, int32_t out,
                 int32_t in, int heads) {
  nd_graph *g = b->g;
  nd__task_spec s;
  nd__spec_init(&s, kind, ph, r, mb, l);
  int hs = g->C / g->NH;
  s.t.a.rope = (struct nd_rope_args){(int64_t)g->B * g->T * heads * hs, g->B, g->T, heads, hs, rope_of(b->cfg)};
  if (g->cp > 1) { /* the rank's chunks are at their true positions */
    nd__ring_rope(b, ph, r, mb, l, out, in, &s.t.a.rope);
    return;
  }
  nd__acc(&s, out, ND_ACCESS_W);
  nd__acc(&s, in, ND_ACCESS_R);
  nd__emit(b, &s);
}

static struct nd_gqa_args attn_args(const nd_graph *g) {
  dims z = dims_of(g);
  return (struct nd_gqa_args){g->B, g->T, z.NHs, z.hs, z.KVs};
}

/* A [out, in] weight's forward: out = in . w^T. */
static void linear(nd__builder *b, nd_rank r, int mb, int l, int32_t out, int32_t in, int32_t w, int K, int N) {
  nd__matmul_fwd(
      b, r, mb, l,
      &(nd__linear){.out = out, .inp = in, .w = w, .bias = -1, .M = b->g->B * b->g->T, .K = K, .N = N, .trans_w = 1});
}

/* ------------------------------------------------------------ forward */

static void attention_forward(nd__builder *b, nd_rank r, int mb, int l) {
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_GQA_FWD, ND_PHASE_F, r, mb, l);
  s.t.a.gqa = attn_args(b->g);
  nd__acc(&s, A(b, r, mb, l, A_ATTY), ND_ACCESS_W);
  nd__acc(&s, A(b, r, mb, l, A_ATT_LSE), ND_ACCESS_W);
  nd__acc(&s, A(b, r, mb, l, A_QR), ND_ACCESS_R);
  nd__acc(&s, A(b, r, mb, l, A_KR), ND_ACCESS_R);
  nd__acc(&s, A(b, r, mb, l, A_V), ND_ACCESS_R);
  nd__emit(b, &s);
  nd_graph *g = b->g;
  if (g->cp == 1) return;
  int32_t q[ND_MAX_CONTEXT], k[ND_MAX_CONTEXT], v[ND_MAX_CONTEXT];
  for (int c = 0; c < g->cp; c++) {
    nd_rank rc = R(r.dp - r.dp % g->cp + c, r.pp, r.tp);
    q[c] = A(b, rc, mb, l, A_QR), k[c] = A(b, rc, mb, l, A_KR), v[c] = A(b, rc, mb, l, A_V);
  }
  nd__ring_attention_fwd(b, r, mb, l, A(b, r, mb, l, A_ATTY), A(b, r, mb, l, A_ATT_LSE), &(nd__ring_qkv){q, k, v},
                         A(b, r, mb, l, A_RING_OUT), A(b, r, mb, l, A_RING_LSE));
}

static void layer_forward(nd__builder *b, int d, int st, int mb, int l) {
  nd_graph *g = b->g;
  dims z = dims_of(g);
  int C = g->C, Q = z.NHs * z.hs, KV = z.KVs * z.hs;
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t x = nd__layer_input(b, r, mb, l);
    int32_t ln1 = A(b, r, mb, l, A_LN1);
    nd__norm_fwd(b, ND__RMSNORM, r, mb, l,
                 &(nd__norm){.out = ln1, .rstd = A(b, r, mb, l, A_LN1_RSTD), .inp = x, .w = P(b, r, LP(l, L_IN_NORM))});
    linear(b, r, mb, l, A(b, r, mb, l, A_Q), ln1, P(b, r, LP(l, L_Q)), C, Q);
    linear(b, r, mb, l, A(b, r, mb, l, A_K), ln1, P(b, r, LP(l, L_K)), C, KV);
    linear(b, r, mb, l, A(b, r, mb, l, A_V), ln1, P(b, r, LP(l, L_V)), C, KV);
    if (g->gen_cache) { /* RoPE at the cached positions, in the attention */
      int32_t qkv[3] = {A(b, r, mb, l, A_Q), A(b, r, mb, l, A_K), A(b, r, mb, l, A_V)};
      nd_rope ro = rope_of(b->cfg);
      nd__gen_attention(b, r, l, A(b, r, mb, l, A_ATTY), qkv, 3, &ro, g->NKV);
      linear(b, r, mb, l, A(b, r, mb, l, A_ATTPROJ), A(b, r, mb, l, A_ATTY), P(b, r, LP(l, L_O)), Q, C);
      continue;
    }
    rope(b, ND_TASK_ROPE_FWD, ND_PHASE_F, r, mb, l, A(b, r, mb, l, A_QR), A(b, r, mb, l, A_Q), z.NHs);
    rope(b, ND_TASK_ROPE_FWD, ND_PHASE_F, r, mb, l, A(b, r, mb, l, A_KR), A(b, r, mb, l, A_K), z.KVs);
    if (g->cp > 1) continue; /* every context rank's keys and values first, then the ring */
    attention_forward(b, r, mb, l);
    linear(b, r, mb, l, A(b, r, mb, l, A_ATTPROJ), A(b, r, mb, l, A_ATTY), P(b, r, LP(l, L_O)), Q, C);
  }
  for (int i = 0; g->cp > 1 && i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    attention_forward(b, r, mb, l);
    linear(b, r, mb, l, A(b, r, mb, l, A_ATTPROJ), A(b, r, mb, l, A_ATTY), P(b, r, LP(l, L_O)), Q, C);
  }
  nd__allreduce_tp(b, d, st, l, A_ATTPROJ, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t x = nd__layer_input(b, r, mb, l);
    int32_t res2 = A(b, r, mb, l, A_RES2), ln2 = A(b, r, mb, l, A_LN2);
    nd__elementwise(b, ND_TASK_RESIDUAL_FWD, ND_PHASE_F, r, mb, l, res2, x, A(b, r, mb, l, A_ATTPROJ), r.tp > 0);
    nd__norm_fwd(
        b, ND__RMSNORM, r, mb, l,
        &(nd__norm){.out = ln2, .rstd = A(b, r, mb, l, A_LN2_RSTD), .inp = res2, .w = P(b, r, LP(l, L_POST_NORM))});
    linear(b, r, mb, l, A(b, r, mb, l, A_GATE), ln2, P(b, r, LP(l, L_GATE)), C, z.Is);
    linear(b, r, mb, l, A(b, r, mb, l, A_UP), ln2, P(b, r, LP(l, L_UP)), C, z.Is);
    int32_t h = A(b, r, mb, l, A_H);
    nd__elementwise(b, ND_TASK_SWIGLU_FWD, ND_PHASE_F, r, mb, l, h, A(b, r, mb, l, A_GATE), A(b, r, mb, l, A_UP), 0);
    if (b->recomputing) continue; /* what follows makes the block's output alone: kept */
    linear(b, r, mb, l, A(b, r, mb, l, A_DOWN), h, P(b, r, LP(l, L_DOWN)), z.Is, C);
  }
  if (b->recomputing) return;
  nd__allreduce_tp(b, d, st, l, A_DOWN, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t xout = A(b, r, mb, l, A_XOUT);
    nd__elementwise(b, ND_TASK_RESIDUAL_FWD, ND_PHASE_F, r, mb, l, xout, A(b, r, mb, l, A_RES2), A(b, r, mb, l, A_DOWN),
                    r.tp > 0);
  }
}

/* ------------------------------------------------------------ backward */

/* The input and weight gradients of an [out, in] weight; add: dinp already holds another consumer's part. */
static void linear_bwd(nd__builder *b, nd_rank r, int mb, int l, int32_t dinp, int32_t dout, int32_t inp, int p, int K,
                       int N, int add) {
  nd__matmul_bwd(b, r, mb, l,
                 &(nd__linear){.dinp = dinp,
                               .dout = dout,
                               .inp = inp,
                               .w = P(b, r, p),
                               .dw = G(b, r, p),
                               .dbias = -1,
                               .M = b->g->B * b->g->T,
                               .K = K,
                               .N = N,
                               .trans_w = 1,
                               .dinp_add = add});
}

/* RoPE's backward and the q, k, v projections' once rank r's dq, dk, dv are complete. */
static void qkv_backward(nd__builder *b, nd_rank r, int mb, int l) {
  dims z = dims_of(b->g);
  int C = b->g->C, Q = z.NHs * z.hs, KV = z.KVs * z.hs;
  rope(b, ND_TASK_ROPE_BWD, ND_PHASE_B, r, mb, l, A(b, r, mb, l, A_D_Q), A(b, r, mb, l, A_D_QR), z.NHs);
  rope(b, ND_TASK_ROPE_BWD, ND_PHASE_B, r, mb, l, A(b, r, mb, l, A_D_K), A(b, r, mb, l, A_D_KR), z.KVs);
  int32_t ln1 = A(b, r, mb, l, A_LN1), dln1 = A(b, r, mb, l, A_D_LN1);
  linear_bwd(b, r, mb, l, dln1, A(b, r, mb, l, A_D_Q), ln1, LP(l, L_Q), C, Q, 0);
  linear_bwd(b, r, mb, l, dln1, A(b, r, mb, l, A_D_K), ln1, LP(l, L_K), C, KV, 1);
  linear_bwd(b, r, mb, l, dln1, A(b, r, mb, l, A_D_V), ln1, LP(l, L_V), C, KV, 1);
}

static void layer_backward(nd__builder *b, int d, int st, int mb, int l) {
  nd_graph *g = b->g;
  dims z = dims_of(g);
  int C = g->C, Q = z.NHs * z.hs;
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t ln2 = A(b, r, mb, l, A_LN2), dln2 = A(b, r, mb, l, A_D_LN2);
    linear_bwd(b, r, mb, l, A(b, r, mb, l, A_D_H), A(b, r, mb, l, A_D_XOUT), A(b, r, mb, l, A_H), LP(l, L_DOWN), z.Is,
               C, 0);
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_SWIGLU_BWD, ND_PHASE_B, r, mb, l);
    s.t.a.ew.n = (int64_t)z.BT * z.Is;
    nd__acc(&s, A(b, r, mb, l, A_D_GATE), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_D_UP), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_GATE), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_UP), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_D_H), ND_ACCESS_R);
    nd__emit(b, &s);
    linear_bwd(b, r, mb, l, dln2, A(b, r, mb, l, A_D_GATE), ln2, LP(l, L_GATE), C, z.Is, 0);
    linear_bwd(b, r, mb, l, dln2, A(b, r, mb, l, A_D_UP), ln2, LP(l, L_UP), C, z.Is, 1);
  }
  nd__allreduce_tp(b, d, st, l, A_D_LN2, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    nd__norm_bwd(b, ND__RMSNORM, r, mb, l,
                 &(nd__norm){.dinp = A(b, r, mb, l, A_D_RES2),
                             .dskip = A(b, r, mb, l, A_D_XOUT),
                             .dout = A(b, r, mb, l, A_D_LN2),
                             .inp = A(b, r, mb, l, A_RES2),
                             .w = P(b, r, LP(l, L_POST_NORM)),
                             .rstd = A(b, r, mb, l, A_LN2_RSTD),
                             .dw = G(b, r, LP(l, L_POST_NORM))});
    linear_bwd(b, r, mb, l, A(b, r, mb, l, A_D_ATTY), A(b, r, mb, l, A_D_RES2), A(b, r, mb, l, A_ATTY), LP(l, L_O), Q,
               C, 0);
    if (b->recompute == ND_RECOMPUTE_ATTENTION) {
      b->recomputing = 1;
      attention_forward(b, r, mb, l);
      b->recomputing = 0;
    }
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_GQA_BWD, ND_PHASE_B, r, mb, l);
    s.t.a.gqa = attn_args(g);
    nd__acc(&s, A(b, r, mb, l, A_D_QR), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_D_KR), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_D_V), ND_ACCESS_W);
    nd__acc(&s, A(b, r, mb, l, A_D_ATTY), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_QR), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_KR), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_V), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_ATTY), ND_ACCESS_R);
    nd__acc(&s, A(b, r, mb, l, A_ATT_LSE), ND_ACCESS_R);
    nd__emit(b, &s);
    if (g->cp == 1) qkv_backward(b, r, mb, l);
  }
  if (g->cp > 1) {
    /* every rank's own block wrote its dq, dk, dv: then the ring's blocks,
     * query rank by query rank, each adding to the keys' owner in that order */
    for (int t = 0; t < g->tp; t++) {
      int32_t q[ND_MAX_CONTEXT], k[ND_MAX_CONTEXT], v[ND_MAX_CONTEXT];
      int32_t dq[ND_MAX_CONTEXT], dk[ND_MAX_CONTEXT], dv[ND_MAX_CONTEXT];
      for (int c = 0; c < g->cp; c++) {
        nd_rank rc = R(d * g->cp + c, st, t);
        q[c] = A(b, rc, mb, l, A_QR), k[c] = A(b, rc, mb, l, A_KR), v[c] = A(b, rc, mb, l, A_V);
        dq[c] = A(b, rc, mb, l, A_D_QR), dk[c] = A(b, rc, mb, l, A_D_KR), dv[c] = A(b, rc, mb, l, A_D_V);
      }
      for (int c = 0; c < g->cp; c++) {
        nd_rank r = R(d * g->cp + c, st, t);
        for (int kr = 0; kr < g->cp; kr++)
          if (kr != c)
            nd__ring_attention_bwd(b, r, kr, mb, l, &(nd__ring_qkv){dq, dk, dv}, A(b, r, mb, l, A_D_ATTY),
                                   &(nd__ring_qkv){q, k, v}, A(b, r, mb, l, A_ATTY), A(b, r, mb, l, A_ATT_LSE),
                                   A(b, r, mb, l, A_RING_DK), A(b, r, mb, l, A_RING_DV));
      }
    }
    for (int i = 0; i < nd__group_size(g); i++) qkv_backward(b, nd__group_rank(g, d, st, i), mb, l);
  }
  nd__allreduce_tp(b, d, st, l, A_D_LN1, mb);
  for (int i = 0; i < nd__group_size(g); i++) {
    nd_rank r = nd__group_rank(g, d, st, i);
    int32_t x = nd__layer_input(b, r, mb, l);
    int32_t dx = nd__layer_input_grad(b, r, mb, l);
    nd__norm_bwd(b, ND__RMSNORM, r, mb, l,
                 &(nd__norm){.dinp = dx,
                             .dskip = A(b, r, mb, l, A_D_RES2),
                             .dout = A(b, r, mb, l, A_D_LN1),
                             .inp = x,
                             .w = P(b, r, LP(l, L_IN_NORM)),
                             .rstd = A(b, r, mb, l, A_LN1_RSTD),
                             .dw = G(b, r, LP(l, L_IN_NORM))});
  }
}

/* The sizes only Llama has, from the configuration (checked there). */
static int check(nd_graph *g, const nd_config *cfg, nd_error *err) {
  (void)err;
  g->NKV = (int)nd_config_n_kv_head(cfg);
  g->FF = (int)nd_config_intermediate_size(cfg);
  g->tied = cfg->model.tie_word_embeddings;
  return 0;
}

const nd__model nd__llama_model = {.acts = &acts,
                                   .check = check,
                                   .nparams = nparams,
                                   .add_rank_params = add_rank_params,
                                   .layer_forward = layer_forward,
                                   .layer_backward = layer_backward,
                                   .norm = ND__RMSNORM,
                                   .embed = P_EMBED,
                                   .pos_embed = -1,
                                   .norm_w = P_NORM,
                                   .norm_b = -1,
                                   .head = P_HEAD};

int64_t nd__llama_param_order(const char *hf_name) {
  if (strcmp(hf_name, "model.embed_tokens.weight") == 0) return 0;
  int layer, used = 0;
  if (sscanf(hf_name, "model.layers.%d.%n", &layer, &used) == 1 && used > 0)
    for (int j = 0; j < L_NPARAMS; j++)
      if (strcmp(hf_name + used, layer_param_names[j]) == 0) return 1 + (int64_t)layer * L_NPARAMS + j;
  if (strcmp(hf_name, "model.norm.weight") == 0) return INT64_MAX - 1;
  return INT64_MAX;
}
