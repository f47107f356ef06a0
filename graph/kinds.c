/* The rows of the task-kind table (graph/kinds.h). A buffer's line reads:
 * name, role, access mode, dtype, presence, repetition, weight, beta, shape. */
#include "graph/kinds.h"

#include <stdio.h>
#include <string.h>

#include "graph/builder.h"

#define IN  ND_ROLE_IN
#define OUT ND_ROLE_OUT
#define R   ND_ACCESS_R
#define W   ND_ACCESS_W
#define RW  ND_ACCESS_RW
#define F32 ND_DT_F32
#define I32 ND_DT_I32
#define F64 ND_DT_F64
#define BF16 ND_DT_BF16
#define SHAPE(...) \
  (sizeof((uint8_t[]){__VA_ARGS__})), { __VA_ARGS__ }
/* A buffer: B(name, role, mode, dtype, presence, repeat, weight, beta, dims...) */
#define B(name, role, mode, dt, pres, rep, wt, beta, ...) \
  { name, role, mode, dt, pres, rep, wt, beta, SHAPE(__VA_ARGS__) }
/* The common case: f32, always there, once, no weight layout, no beta. */
#define T(name, role, mode, ...) B(name, role, mode, F32, ND_ALWAYS, ND_ONCE, 0, 0, __VA_ARGS__)

static float beta_mm(const nd_task *t) { return t->a.mm.beta; }
static float beta_ln(const nd_task *t) { return t->a.ln.beta; }
static float beta_emb(const nd_task *t) { return t->a.emb.beta; }

/* kernel-check's sizes: odd, degenerate (1) and larger, with and without the options */
#define MM(M, K, N, tw, bias, beta)   \
  {                                   \
    .mm = { M, K, N, tw, bias, beta } \
  }
#define LN(N, C, skip, beta)   \
  {                            \
    .ln = { N, C, skip, beta } \
  }
#define AT(B, T, NH, hs)     \
  {                          \
    .attn = { B, T, NH, hs } \
  }
#define EW(n)   \
  {             \
    .ew = { n } \
  }
static const nd_task_args mm_samples[] = {MM(7, 5, 3, 1, 0, 1), MM(1, 1, 1, 0, 1, 0), MM(33, 17, 65, 0, 1, 1),
                                          MM(64, 48, 40, 1, 1, 0)};
static const nd_task_args ln_samples[] = {LN(3, 8, 1, 1), LN(1, 1, 0, 0), LN(17, 33, 0, 0), LN(5, 64, 1, 1)};
static const nd_task_args at_samples[] = {AT(2, 5, 2, 3), AT(1, 1, 1, 1), AT(1, 16, 4, 8)};
static const nd_task_args ew_samples[] = {EW(7), EW(1), EW(1000)};
#define SAMPLES(x) .samples = x, .n_samples = (int)(sizeof x / sizeof x[0])

/* The row's buffers in order, counted so that the count cannot drift from the list. */
#define BUFFERS(...) \
  .n_buffers = (int)(sizeof((nd_kind_buffer[]){__VA_ARGS__}) / sizeof(nd_kind_buffer)), .buf = {__VA_ARGS__}

/* Buffer lists that the attention kinds share with their context-parallel
 * twins (graph/ring.c): a ring block is the attention's call on another
 * rank's keys and values, so its rows repeat these lines. */
#define D_HEADS        ND_D_B, ND_D_T, ND_D_NH, ND_D_HS
#define D_LSE          ND_D_B, ND_D_NH, ND_D_T
#define D_QKV          ND_D_B, ND_D_T, ND_D_3, ND_D_NH, ND_D_HS
#define D_KV           ND_D_B, ND_D_T, ND_D_KV, ND_D_HS
/* what a forward writes (a merge adds into it) and a backward reads back */
#define ATTN_OUT(mode) T("out", OUT, mode, D_HEADS), T("lse", OUT, mode, D_LSE)
#define ATTN_SAVED     T("out", IN, R, D_HEADS), T("lse", IN, R, D_LSE)
/* Llama's separate q, k, v (grouped-query heads) */
#define GQA_IN         T("q", IN, R, D_HEADS), T("k", IN, R, D_KV), T("v", IN, R, D_KV)
/* a grouped-query backward; the ring's adds its dq into the query rank's (RW) */
#define GQA_BWD(dq) \
  T("dq", OUT, dq, D_HEADS), T("dk", OUT, W, D_KV), T("dv", OUT, W, D_KV), T("dout", IN, R, D_HEADS), GQA_IN, ATTN_SAVED
#define ROPE_FWD T("out", OUT, W, ND_D_n), T("inp", IN, R, ND_D_n)
#define ROPE_BWD T("dinp", OUT, W, ND_D_n), T("dout", IN, R, ND_D_n)

/* One row per kind; a field left out is 0 or NULL: not replaceable, not an
 * activation, no beta (0), no kernel-check sizes. */
static const nd_kind_row rows[ND_TASK_KIND_COUNT] = {
    [ND_TASK_LOAD_BATCH] = {.name = "load_batch",
                            BUFFERS(B("tokens", OUT, W, I32, ND_IF_TOKENS, ND_ONCE, 0, 0, ND_D_LBT),
                                    B("targets", OUT, W, I32, ND_IF_TARGETS, ND_ONCE, 0, 0, ND_D_LBT)),
                            .flops = nd__flops_none},
    [ND_TASK_EMBED_FWD] = {.name = "embedding_fwd",
                           BUFFERS(T("out", OUT, W, ND_D_BT, ND_D_EC),
                                   B("tokens", IN, R, I32, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_BT),
                                   T("wte", IN, R, ND_D_VS, ND_D_EC),
                                   B("wpe", IN, R, F32, ND_IF_WPE, ND_ONCE, 0, 0, ND_D_ET, ND_D_EC)),
                           .flops = nd__flops_embedding,
                           .beta = beta_emb},
    [ND_TASK_EMBED_BWD] = {.name = "embedding_bwd",
                           BUFFERS(B("dtable", OUT, W, F32, ND_ALWAYS, ND_ONCE, 0, 1, ND_D_TABLE, ND_D_EC),
                                   T("dout", IN, R, ND_D_BT, ND_D_EC),
                                   B("tokens", IN, R, I32, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_BT)),
                           .flops = nd__flops_embedding,
                           .beta = beta_emb},
    [ND_TASK_LN_FWD] = {.name = "layernorm_fwd",
                        .replaceable = 1,
                        BUFFERS(T("out", OUT, W, ND_D_ROWS, ND_D_C), T("mean", OUT, W, ND_D_ROWS),
                                T("rstd", OUT, W, ND_D_ROWS), T("inp", IN, R, ND_D_ROWS, ND_D_C),
                                T("weight", IN, R, ND_D_C), T("bias", IN, R, ND_D_C)),
                        .flops = nd__flops_layernorm,
                        SAMPLES(ln_samples)},
    [ND_TASK_LN_BWD_IN] = {.name = "layernorm_bwd_input",
                           .replaceable = 1,
                           BUFFERS(T("dinp", OUT, W, ND_D_ROWS, ND_D_C),
                                   B("dskip", IN, R, F32, ND_IF_SKIP, ND_ONCE, 0, 0, ND_D_ROWS, ND_D_C),
                                   T("dout", IN, R, ND_D_ROWS, ND_D_C), T("inp", IN, R, ND_D_ROWS, ND_D_C),
                                   T("weight", IN, R, ND_D_C), T("mean", IN, R, ND_D_ROWS),
                                   T("rstd", IN, R, ND_D_ROWS)),
                           .flops = nd__flops_layernorm,
                           SAMPLES(ln_samples)},
    [ND_TASK_LN_BWD_W] = {.name = "layernorm_bwd_weight",
                          .replaceable = 1,
                          BUFFERS(B("dweight", OUT, W, F32, ND_ALWAYS, ND_ONCE, 0, 1, ND_D_C),
                                  B("dbias", OUT, W, F32, ND_ALWAYS, ND_ONCE, 0, 1, ND_D_C),
                                  T("dout", IN, R, ND_D_ROWS, ND_D_C), T("inp", IN, R, ND_D_ROWS, ND_D_C),
                                  T("mean", IN, R, ND_D_ROWS), T("rstd", IN, R, ND_D_ROWS)),
                          .flops = nd__flops_layernorm,
                          .beta = beta_ln,
                          SAMPLES(ln_samples)},
    [ND_TASK_MATMUL_FWD] = {.name = "matmul_fwd",
                            .replaceable = 1,
                            BUFFERS(T("out", OUT, W, ND_D_M, ND_D_N), T("inp", IN, R, ND_D_M, ND_D_K),
                                    B("weight", IN, R, F32, ND_ALWAYS, ND_ONCE, 1, 0, ND_D_K, ND_D_N),
                                    B("bias", IN, R, F32, ND_IF_BIAS, ND_ONCE, 0, 0, ND_D_N)),
                            .flops = nd__flops_matmul,
                            SAMPLES(mm_samples)},
    [ND_TASK_MATMUL_BWD_IN] = {.name = "matmul_bwd_input",
                               .replaceable = 1,
                               BUFFERS(B("dinp", OUT, W, F32, ND_ALWAYS, ND_ONCE, 0, 1, ND_D_M, ND_D_K),
                                       T("dout", IN, R, ND_D_M, ND_D_N),
                                       B("weight", IN, R, F32, ND_ALWAYS, ND_ONCE, 1, 0, ND_D_K, ND_D_N)),
                               .flops = nd__flops_matmul,
                               .beta = beta_mm,
                               SAMPLES(mm_samples)},
    [ND_TASK_MATMUL_BWD_W] = {.name = "matmul_bwd_weight",
                              .replaceable = 1,
                              BUFFERS(B("dweight", OUT, W, F32, ND_ALWAYS, ND_ONCE, 1, 1, ND_D_K, ND_D_N),
                                      B("dbias", OUT, W, F32, ND_IF_BIAS, ND_ONCE, 0, 1, ND_D_N),
                                      T("dout", IN, R, ND_D_M, ND_D_N), T("inp", IN, R, ND_D_M, ND_D_K)),
                              .flops = nd__flops_matmul,
                              .beta = beta_mm,
                              SAMPLES(mm_samples)},
    [ND_TASK_ATTN_FWD] = {.name = "attention_fwd",
                          .replaceable = 1,
                          BUFFERS(ATTN_OUT(W), T("qkv", IN, R, D_QKV)),
                          .flops = nd__flops_attention,
                          SAMPLES(at_samples)},
    [ND_TASK_ATTN_BWD] = {.name = "attention_bwd",
                          .replaceable = 1,
                          BUFFERS(T("dqkv", OUT, W, D_QKV), T("dout", IN, R, D_HEADS), T("qkv", IN, R, D_QKV),
                                  ATTN_SAVED),
                          .flops = nd__flops_attention,
                          .repeated = nd__repeated_attention,
                          SAMPLES(at_samples)},
    [ND_TASK_ACT_FWD] = {.name = "activation_fwd",
                         .replaceable = 1,
                         .activation = 1,
                         BUFFERS(T("out", OUT, W, ND_D_n), T("inp", IN, R, ND_D_n)),
                         .flops = nd__flops_elementwise,
                         SAMPLES(ew_samples)},
    [ND_TASK_ACT_BWD] = {.name = "activation_bwd",
                         .replaceable = 1,
                         .activation = 1,
                         BUFFERS(T("dinp", OUT, W, ND_D_n), T("inp", IN, R, ND_D_n), T("dout", IN, R, ND_D_n)),
                         .flops = nd__flops_elementwise,
                         SAMPLES(ew_samples)},
    [ND_TASK_RESIDUAL_FWD] = {.name = "residual_fwd",
                              .replaceable = 1,
                              BUFFERS(T("out", OUT, W, ND_D_n), T("a", IN, R, ND_D_n), T("b", IN, R, ND_D_n)),
                              .flops = nd__flops_elementwise,
                              SAMPLES(ew_samples)},
    [ND_TASK_CE_STATS] = {.name = "crossentropy_stats",
                          BUFFERS(T("stats", OUT, W, ND_D_CN, ND_D_3), T("logits", IN, R, ND_D_CN, ND_D_CVS),
                                  B("targets", IN, R, I32, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_CN)),
                          .flops = nd__flops_crossentropy},
    [ND_TASK_CE_COMBINE] = {.name = "crossentropy_combine",
                            BUFFERS(B("stats", IN, R, F32, ND_ALWAYS, ND_PER_SHARD, 0, 0, ND_D_CN, ND_D_3),
                                    B("loss", OUT, W, F64, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_1)),
                            .flops = nd__flops_crossentropy},
    [ND_TASK_CE_LSE] = {.name = "crossentropy_lse",
                        BUFFERS(B("lse", OUT, W, F32, ND_ALWAYS, ND_PER_SHARD, 0, 0, ND_D_CN),
                                B("stats", IN, R, F32, ND_ALWAYS, ND_PER_SHARD, 0, 0, ND_D_CN, ND_D_3)),
                        .flops = nd__flops_crossentropy},
    [ND_TASK_CE_BWD] = {.name = "crossentropy_bwd",
                        BUFFERS(T("logits", OUT, RW, ND_D_CN, ND_D_CVS), T("lse", IN, R, ND_D_CN),
                                B("targets", IN, R, I32, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_CN)),
                        .flops = nd__flops_crossentropy},
    [ND_TASK_ALLREDUCE] = {.name = "allreduce",
                           BUFFERS(B("part", OUT, RW, ND_DT_COLL, ND_ALWAYS, ND_PER_PART, 0, 0, ND_D_n)),
                           .flops = nd__flops_allreduce},
    [ND_TASK_SENDRECV] = {.name = "sendrecv",
                          BUFFERS(B("src", IN, R, F32, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_BUF), T("dst", OUT, W, ND_D_n)),
                          .flops = nd__flops_none},
    /* each output is the parts concatenated in rank order (a part's size is its own) */
    [ND_TASK_ALLGATHER] = {.name = "allgather",
                           BUFFERS(B("out", OUT, W, F32, ND_ALWAYS, ND_PER_PART, 0, 0, ND_D_n),
                                   B("part", IN, R, F32, ND_ALWAYS, ND_PER_PART, 0, 0, ND_D_BUF)),
                           .flops = nd__flops_none},
    [ND_TASK_GRAD_SUMSQ] = {.name = "grad_sumsq",
                            BUFFERS(B("normsq", OUT, W, F64, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_1),
                                    B("grad", IN, R, F32, ND_ALWAYS, ND_REST, 0, 0, ND_D_BUF)),
                            .flops = nd__flops_sumsq},
    [ND_TASK_RMSNORM_FWD] = {.name = "rmsnorm_fwd",
                             BUFFERS(T("out", OUT, W, ND_D_ROWS, ND_D_C), T("rstd", OUT, W, ND_D_ROWS),
                                     T("inp", IN, R, ND_D_ROWS, ND_D_C), T("weight", IN, R, ND_D_C)),
                             .flops = nd__flops_layernorm},
    [ND_TASK_RMSNORM_BWD_IN] = {.name = "rmsnorm_bwd_input",
                                BUFFERS(T("dinp", OUT, W, ND_D_ROWS, ND_D_C),
                                        B("dskip", IN, R, F32, ND_IF_SKIP, ND_ONCE, 0, 0, ND_D_ROWS, ND_D_C),
                                        T("dout", IN, R, ND_D_ROWS, ND_D_C), T("inp", IN, R, ND_D_ROWS, ND_D_C),
                                        T("weight", IN, R, ND_D_C), T("rstd", IN, R, ND_D_ROWS)),
                                .flops = nd__flops_layernorm},
    [ND_TASK_RMSNORM_BWD_W] = {.name = "rmsnorm_bwd_weight",
                               BUFFERS(B("dweight", OUT, W, F32, ND_ALWAYS, ND_ONCE, 0, 1, ND_D_C),
                                       T("dout", IN, R, ND_D_ROWS, ND_D_C), T("inp", IN, R, ND_D_ROWS, ND_D_C),
                                       T("rstd", IN, R, ND_D_ROWS)),
                               .flops = nd__flops_layernorm,
                               .beta = beta_ln},
    [ND_TASK_ROPE_FWD] = {.name = "rope_fwd", BUFFERS(ROPE_FWD), .flops = nd__flops_elementwise},
    [ND_TASK_ROPE_BWD] = {.name = "rope_bwd", BUFFERS(ROPE_BWD), .flops = nd__flops_elementwise},
    [ND_TASK_SWIGLU_FWD] = {.name = "swiglu_fwd",
                            BUFFERS(T("out", OUT, W, ND_D_n), T("gate", IN, R, ND_D_n), T("up", IN, R, ND_D_n)),
                            .flops = nd__flops_elementwise},
    [ND_TASK_SWIGLU_BWD] = {.name = "swiglu_bwd",
                            BUFFERS(T("dgate", OUT, W, ND_D_n), T("dup", OUT, W, ND_D_n), T("gate", IN, R, ND_D_n),
                                    T("up", IN, R, ND_D_n), T("dout", IN, R, ND_D_n)),
                            .flops = nd__flops_elementwise},
    [ND_TASK_GQA_FWD] = {.name = "gqa_fwd", BUFFERS(ATTN_OUT(W), GQA_IN), .flops = nd__flops_attention},
    [ND_TASK_GQA_BWD] = {.name = "gqa_bwd",
                         BUFFERS(GQA_BWD(W)),
                         .flops = nd__flops_attention,
                         .repeated = nd__repeated_attention},
    /* generation: the new tokens' keys and values into the cache at the
     * submission's position, then their attention over it (graph/generate.c) */
    [ND_TASK_KV_ATTN] = {.name = "kv_attention",
                         BUFFERS(T("out", OUT, W, ND_D_T, ND_D_NH, ND_D_HS),
                                 T("kcache", OUT, RW, ND_D_S, ND_D_NH, ND_D_HS),
                                 T("vcache", OUT, RW, ND_D_S, ND_D_NH, ND_D_HS),
                                 T("qkv", IN, R, ND_D_T, ND_D_3, ND_D_NH, ND_D_HS)),
                         .flops = nd__flops_kv_attention},
    [ND_TASK_KV_GQA] = {.name = "kv_gqa",
                        BUFFERS(T("out", OUT, W, ND_D_T, ND_D_NH, ND_D_HS),
                                T("kcache", OUT, RW, ND_D_S, ND_D_KV, ND_D_HS),
                                T("vcache", OUT, RW, ND_D_S, ND_D_KV, ND_D_HS), T("q", IN, R, ND_D_T, ND_D_NH, ND_D_HS),
                                T("k", IN, R, ND_D_T, ND_D_KV, ND_D_HS), T("v", IN, R, ND_D_T, ND_D_KV, ND_D_HS)),
                        .flops = nd__flops_kv_attention},
    [ND_TASK_POS_ADD] = {.name = "position_add",
                         BUFFERS(T("x", OUT, RW, ND_D_T, ND_D_HS), T("wpe", IN, R, ND_D_S, ND_D_HS)),
                         .flops = nd__flops_kv_attention},
    /* train.precision bf16: a GEMM weight's bf16 copy, once a step (graph/emit.c) */
    [ND_TASK_CAST_BF16] = {.name = "cast_bf16",
                           BUFFERS(B("out", OUT, W, BF16, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_n), T("inp", IN, R, ND_D_n)),
                           .flops = nd__flops_elementwise},
    /* context parallelism (graph/ring.c): another rank's block of keys and
     * values, its merge, its backward and the keys' gradient sent back; the
     * position rows of a rank's chunks */
    [ND_TASK_RING_ATTN_FWD] = {.name = "ring_attention_fwd",
                               BUFFERS(ATTN_OUT(W), T("qkv", IN, R, D_QKV), T("kv", IN, R, D_QKV)),
                               .flops = nd__flops_attention},
    [ND_TASK_RING_ATTN_MERGE] = {.name = "ring_attention_merge",
                                 BUFFERS(ATTN_OUT(RW), T("part", IN, R, D_HEADS), T("part_lse", IN, R, D_LSE)),
                                 .flops = nd__flops_none},
    [ND_TASK_RING_ATTN_BWD] = {.name = "ring_attention_bwd",
                               BUFFERS(T("dqkv", OUT, RW, D_QKV), T("dkv", OUT, W, D_QKV), T("dout", IN, R, D_HEADS),
                                       T("qkv", IN, R, D_QKV), T("kv", IN, R, D_QKV), ATTN_SAVED),
                               .flops = nd__flops_attention,
                               .repeated = nd__repeated_attention},
    [ND_TASK_RING_KV_ADD] = {.name = "ring_kv_add",
                             BUFFERS(T("dqkv", OUT, RW, D_QKV), T("dkv", IN, R, D_QKV)),
                             .flops = nd__flops_none},
    [ND_TASK_RING_POS_FWD] = {.name = "ring_position_fwd",
                              BUFFERS(T("x", OUT, RW, ND_D_BT, ND_D_EC), T("wpe", IN, R, ND_D_PT, ND_D_EC)),
                              .flops = nd__flops_none},
    [ND_TASK_RING_POS_BWD] = {.name = "ring_position_bwd",
                              BUFFERS(B("dwpe", OUT, W, F32, ND_ALWAYS, ND_ONCE, 0, 1, ND_D_PT, ND_D_EC),
                                      T("dout", IN, R, ND_D_BT, ND_D_EC)),
                              .flops = nd__flops_none,
                              .beta = beta_emb},
    /* the same for Llama's separate q, k, v (grouped-query heads), and RoPE at a rank's true positions */
    [ND_TASK_RING_GQA_FWD] = {.name = "ring_gqa_fwd", BUFFERS(ATTN_OUT(W), GQA_IN), .flops = nd__flops_attention},
    [ND_TASK_RING_GQA_BWD] = {.name = "ring_gqa_bwd",
                              BUFFERS(GQA_BWD(RW)),
                              .flops = nd__flops_attention,
                              .repeated = nd__repeated_attention},
    [ND_TASK_RING_GQA_KV_ADD] = {.name = "ring_gqa_kv_add",
                                 BUFFERS(T("dk", OUT, RW, D_KV), T("dv", OUT, RW, D_KV), T("pdk", IN, R, D_KV),
                                         T("pdv", IN, R, D_KV)),
                                 .flops = nd__flops_none},
    [ND_TASK_RING_ROPE_FWD] = {.name = "ring_rope_fwd", BUFFERS(ROPE_FWD), .flops = nd__flops_elementwise},
    [ND_TASK_RING_ROPE_BWD] = {.name = "ring_rope_bwd", BUFFERS(ROPE_BWD), .flops = nd__flops_elementwise},
    [ND_TASK_ADAMW] = {.name = "adamw",
                       /* param and grad whole, m and v the n elements from adamw.offset (a data-parallel shard) */
                       BUFFERS(T("param", OUT, RW, ND_D_BUF), T("m", OUT, RW, ND_D_n), T("v", OUT, RW, ND_D_n),
                               T("grad", IN, R, ND_D_BUF), B("normsq", IN, R, F64, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_1)),
                       .flops = nd__flops_adamw},
    /* one rank's side: the other shards' ranges copied into its copy */
    [ND_TASK_SHARD_GATHER] = {.name = "shard_gather",
                           BUFFERS(T("dst", OUT, RW, ND_D_n), B("src", IN, R, F32, ND_ALWAYS, ND_PER_PART, 0, 0, ND_D_n)),
                           .flops = nd__flops_none},
    /* a block's whole weight: the shard group's ranges in rank order (empty ranges, at the end, left out) */
    [ND_TASK_PARAM_GATHER] = {.name = "param_gather",
                              BUFFERS(T("dst", OUT, W, ND_D_n), B("range", IN, R, F32, ND_ALWAYS, ND_REST, 0, 0, ND_D_BUF)),
                              .flops = nd__flops_none},
    /* the ranges that keep a shard (each a multiple of shards apart), or one part's shards apart */
    [ND_TASK_REDUCE_SCATTER] = {.name = "reduce_scatter",
                                BUFFERS(B("part", IN, R, F32, ND_ALWAYS, ND_PER_PART, 0, 0, ND_D_n),
                                        B("range", OUT, W, F32, ND_ALWAYS, ND_REST, 0, 0, ND_D_BUF)),
                                .flops = nd__flops_allreduce},
    /* lanes: 8 partial sums per gradient (kernels/cpu/lanes.h), handed along the shard group */
    [ND_TASK_GRAD_SUMSQ_RANGE] = {.name = "grad_sumsq_range",
                                  BUFFERS(B("normsq", OUT, W, F64, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_1),
                                          B("lanes", OUT, W, F64, ND_ALWAYS, ND_ONCE, 0, 0, ND_D_BUF),
                                          B("prev", IN, R, F64, ND_IF_PREV, ND_ONCE, 0, 0, ND_D_BUF),
                                          B("grad", IN, R, F32, ND_ALWAYS, ND_REST, 0, 0, ND_D_BUF)),
                                  .flops = nd__flops_sumsq},
};

const nd_kind_row *nd_kind(enum nd_task_kind kind) { return (unsigned)kind < ND_TASK_KIND_COUNT ? &rows[kind] : NULL; }

const char *nd_task_kind_name(enum nd_task_kind kind) {
  return (unsigned)kind < ND_TASK_KIND_COUNT ? rows[kind].name : "unknown";
}

int nd_task_kind_from_name(const char *name) {
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++)
    if (strcmp(rows[k].name, name) == 0) return k;
  return -1;
}

int64_t nd__task_flops(const nd_task *t) { return rows[t->kind].flops(t); }

int64_t nd_kind_dim(const nd_task *t, enum nd_dim d) {
  const nd_task_args *a = &t->a;
  switch (d) {
  case ND_D_1:
    return 1;
  case ND_D_3:
    return 3;
  case ND_D_M:
    return a->mm.M;
  case ND_D_K:
    return a->mm.K;
  case ND_D_N:
    return a->mm.N;
  case ND_D_ROWS:
    return a->ln.N;
  case ND_D_C:
    return a->ln.C;
  case ND_D_KV:
    return a->gqa.NKV;
  case ND_D_B:
    return a->attn.B;
  case ND_D_T:
    return a->attn.T;
  case ND_D_NH:
    return a->attn.NH;
  case ND_D_HS:
    return a->attn.hs;
  case ND_D_n:
    if (t->kind == ND_TASK_ADAMW) return a->adamw.n;
    if (t->kind == ND_TASK_ALLREDUCE || t->kind == ND_TASK_ALLGATHER || t->kind == ND_TASK_SHARD_GATHER || t->kind == ND_TASK_PARAM_GATHER ||
        t->kind == ND_TASK_REDUCE_SCATTER)
      return a->coll.n;
    return a->ew.n;
  case ND_D_BT:
    return (int64_t)a->emb.B * a->emb.T;
  case ND_D_EC:
    return a->emb.C;
  case ND_D_VS:
    return a->emb.Vs;
  case ND_D_ET:
    return a->emb.T;
  case ND_D_TABLE:
    return a->emb.wpe ? a->emb.T : a->emb.Vs;
  case ND_D_CN:
    return a->ce.N;
  case ND_D_CVS:
    return a->ce.Vs;
  case ND_D_LBT:
    return (int64_t)a->load.B * a->load.T;
  case ND_D_S:
    return a->cache.positions;
  case ND_D_PT:
    return (int64_t)a->emb.T * a->emb.cp;
  case ND_D_BUF:
  case ND_D_COUNT:
    break;
  }
  return 0;
}

const char *nd_kind_dim_name(enum nd_dim d) {
  static const char *const names[ND_D_COUNT] = {"1",  "3", "M",   "K", "N",  "N", "C",    "B", "T",  "NH",  "hs",
                                                "KV", "n", "B*T", "C", "Vs", "T", "Vs|T", "N", "Vs", "B*T", "S", "T*cp", "numel"};
  return (unsigned)d < ND_D_COUNT ? names[d] : "?";
}

int nd_kind_present(const nd_task *t, const nd_kind_buffer *b) {
  switch (b->present) {
  case ND_IF_BIAS:
    return t->a.mm.has_bias;
  case ND_IF_SKIP:
    return t->a.ln.has_skip;
  case ND_IF_WPE:
    return t->a.emb.wpe;
  case ND_IF_TOKENS:
    return t->a.load.tokens;
  case ND_IF_TARGETS:
    return t->a.load.targets;
  case ND_IF_PREV:
    return t->a.sumsq.shard > 0;
  default:
    return 1;
  }
}

int nd_kind_count(const nd_task *t, const nd_kind_buffer *b, int rest) {
  switch (b->repeat) {
  case ND_PER_PART:
    return t->a.coll.nparts;
  case ND_PER_SHARD:
    return t->a.ce.nshards;
  case ND_REST:
    return rest;
  default:
    return 1;
  }
}

int nd_kind_check_access(const nd_task *t, const nd_access *acc, int n) {
  const nd_kind_row *row = nd_kind(t->kind);
  int j = 0;
  for (int i = 0; row && i < row->n_buffers; i++) {
    const nd_kind_buffer *b = &row->buf[i];
    if (!nd_kind_present(t, b)) continue;
    for (int c = nd_kind_count(t, b, n - j); c > 0; c--, j++) {
      if (j >= n) return 0;
      /* an output the step accumulates into is read too */
      int ok = b->mode == ND_ACCESS_W ? (acc[j].mode & ND_ACCESS_W) != 0 : acc[j].mode == b->mode;
      if (!ok) return 0;
    }
  }
  return row && j == n;
}

void nd_kind_describe(enum nd_task_kind kind, char *out, size_t size) {
  static const char *const roles[] = {"", " out"};
  static const char *const dtypes[] = {"", " i32", " f64", " f32|f64", " bf16"};
  static const char *const repeats[] = {"", " per part", " per shard", " each"};
  const nd_kind_row *row = nd_kind(kind);
  size_t len = (size_t)snprintf(out, size, "%-21s", row->name);
  for (int i = 0; i < row->n_buffers && len < size; i++) {
    const nd_kind_buffer *b = &row->buf[i];
    len += (size_t)snprintf(out + len, size - len, "%s %s (", i ? "," : "", b->name);
    for (int d = 0; d < b->ndim && len < size; d++)
      len += (size_t)snprintf(out + len, size - len, "%s%s", d ? ", " : "", nd_kind_dim_name(b->dims[d]));
    if (len < size)
      len += (size_t)snprintf(out + len, size - len, ")%s%s%s%s%s", roles[b->role], b->beta ? " beta" : "",
                              b->present != ND_ALWAYS ? " opt" : "", dtypes[b->dtype], repeats[b->repeat]);
  }
}

void nd_kind_sizes(const nd_task *t, char *out, size_t size) {
  static const char *const flags[] = {"", "bias", "skip", "wpe", "tokens", "targets", "prev"};
  const nd_kind_row *row = nd_kind(t->kind);
  int used[ND_D_COUNT] = {0}, weight = 0, present[ND_IF_PREV + 1] = {0};
  for (int i = 0; i < row->n_buffers; i++) {
    for (int d = 0; d < row->buf[i].ndim; d++) used[row->buf[i].dims[d]] = 1;
    weight |= row->buf[i].weight;
    present[row->buf[i].present] = 1;
  }
  size_t len = 0;
  out[0] = '\0';
  for (int d = ND_D_M; d < ND_D_BUF && len < size; d++)
    if (used[d])
      len += (size_t)snprintf(out + len, size - len, "%s%s %lld", len ? ", " : "", nd_kind_dim_name(d),
                              (long long)nd_kind_dim(t, d));
  if (weight && len < size) len += (size_t)snprintf(out + len, size - len, ", trans_w %d", t->a.mm.trans_w);
  for (int p = ND_IF_BIAS; p <= ND_IF_PREV && len < size; p++)
    if (present[p]) {
      nd_kind_buffer b = {.present = (uint8_t)p};
      len += (size_t)snprintf(out + len, size - len, ", %s %d", flags[p], nd_kind_present(t, &b));
    }
  if (row->beta && len < size) snprintf(out + len, size - len, ", beta %g", row->beta(t));
}
