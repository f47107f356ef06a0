/* The double-precision GPT-2 trainer of gpt.h: forward and backward
 * with the operators of kernels/reference.h and ref.c, AdamW with ref.c's update. */
#include "tests/ref/gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ref/ref.h"

/* The tensors of one block, in Hugging Face order, and their shapes in units of C. */
enum { LN1_W, LN1_B, QKV_W, QKV_B, AP_W, AP_B, LN2_W, LN2_B, FC_W, FC_B, MP_W, MP_B, PER_LAYER };
static const char *const layer_names[PER_LAYER] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
static const int layer_rows[PER_LAYER] = {1, 1, 1, 3, 1, 1, 1, 1, 1, 4, 4, 1}; /* x C; 2-D when cols > 0 */
static const int layer_cols[PER_LAYER] = {0, 0, 3, 0, 1, 0, 0, 0, 4, 0, 1, 0}; /* x C */

#define WTE         0
#define WPE         1
#define LAYER(l, j) (2 + (l)*PER_LAYER + (j))
#define LNF_W(g)    ((g)->n - 2)
#define LNF_B(g)    ((g)->n - 1)

static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

static int add(nd_ref_gpt *g, int i, const char *name, int64_t rows, int64_t cols) {
  snprintf(g->name[i], sizeof g->name[i], "%s", name);
  g->numel[i] = rows * (cols ? cols : 1);
  g->decay[i] = cols > 0;
  g->param[i] = zalloc((size_t)g->numel[i], sizeof(double));
  g->grad[i] = zalloc((size_t)g->numel[i], sizeof(double));
  g->m[i] = zalloc((size_t)g->numel[i], sizeof(double));
  g->v[i] = zalloc((size_t)g->numel[i], sizeof(double));
  return g->param[i] && g->grad[i] && g->m[i] && g->v[i] ? 0 : -1;
}

int nd_ref_gpt_init(nd_ref_gpt *g, int V, int T, int C, int L, int NH) {
  memset(g, 0, sizeof *g);
  *g = (nd_ref_gpt){.V = V, .T = T, .C = C, .L = L, .NH = NH, .n = 2 + L * PER_LAYER + 2};
  g->name = zalloc((size_t)g->n, sizeof *g->name);
  g->numel = zalloc((size_t)g->n, sizeof *g->numel);
  g->decay = zalloc((size_t)g->n, sizeof *g->decay);
  g->param = zalloc((size_t)g->n, sizeof *g->param);
  g->grad = zalloc((size_t)g->n, sizeof *g->grad);
  g->m = zalloc((size_t)g->n, sizeof *g->m);
  g->v = zalloc((size_t)g->n, sizeof *g->v);
  if (!g->name || !g->numel || !g->decay || !g->param || !g->grad || !g->m || !g->v) return -1;
  int rc = add(g, WTE, "wte.weight", V, C) | add(g, WPE, "wpe.weight", T, C);
  char name[ND_REF_GPT_NAME_MAX];
  for (int l = 0; l < L; l++)
    for (int j = 0; j < PER_LAYER; j++) {
      snprintf(name, sizeof name, "h.%d.%s", l, layer_names[j]);
      rc |= add(g, LAYER(l, j), name, (int64_t)layer_rows[j] * C, (int64_t)layer_cols[j] * C);
    }
  rc |= add(g, LNF_W(g), "ln_f.weight", C, 0) | add(g, LNF_B(g), "ln_f.bias", C, 0);
  return rc;
}

void nd_ref_gpt_free(nd_ref_gpt *g) {
  for (int i = 0; g->param && i < g->n; i++) {
    free(g->param[i]);
    free(g->grad[i]);
    free(g->m[i]);
    free(g->v[i]);
  }
  free(g->name);
  free(g->numel);
  free(g->decay);
  free(g->param);
  free(g->grad);
  free(g->m);
  free(g->v);
  memset(g, 0, sizeof *g);
}

int nd_ref_gpt_find(const nd_ref_gpt *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->name[i], name) == 0) return i;
  return -1;
}

double nd_ref_gpt_lr(double lr, int64_t warmup, int64_t steps, int64_t n) {
  if (n <= warmup) return lr * (double)n / (double)warmup;
  double progress = steps > warmup ? (double)(n - 1 - warmup) / (double)(steps - warmup) : 1.0;
  return lr / 10 + 0.5 * (lr - lr / 10) * (1.0 + cos(M_PI * fmin(progress, 1.0)));
}

/* ---- backward of the operators; every gradient is accumulated (+=), as kernels/reference.h's */

static void gelu_bwd(double *dinp, const double *inp, const double *dout, int64_t n) {
  const double s = sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; i++) {
    double x = inp[i], th = tanh(s * (x + 0.044715 * x * x * x));
    double dx = 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * s * (1 + 3 * 0.044715 * x * x);
    dinp[i] += dx * dout[i];
  }
}

/* ---- one step */

typedef struct acts {
  double *x;                             /* (L + 1, N, C) residual stream entering each block, then leaving the last */
  double *xmid;                          /* (L, N, C) after attention */
  double *ln1, *ln2;                     /* (L, N, C) */
  double *mean1, *rstd1, *mean2, *rstd2; /* (L, N) */
  double *qkv;                           /* (L, N, 3C) */
  double *lse;                           /* (L, B, NH, T) each query row's log-sum-exp */
  double *atty;                          /* (L, N, C) */
  double *fc, *fcg;                      /* (L, N, 4C) */
  double *lnf, *meanf, *rstdf;           /* (N, C), (N), (N) */
  double *logits;                        /* (N, V) */
} acts;

#define NACTS (sizeof(acts) / sizeof(double *))

static int acts_alloc(acts *a, const nd_ref_gpt *g, int B) {
  size_t N = (size_t)B * g->T, C = (size_t)g->C, L = (size_t)g->L, T = (size_t)g->T;
  size_t sizes[NACTS] = {
      (L + 1) * N * C,       L * N * C, L * N * C,     L * N * C,     L * N, L * N, L * N, L * N,   L * N * 3 * C,
      L * B * g->NH * T,     L * N * C, L * N * 4 * C, L * N * 4 * C, N * C, N,     N,     N * g->V};
  double **p = (double **)a;
  int rc = 0;
  for (size_t i = 0; i < NACTS; i++) rc |= !(p[i] = zalloc(sizes[i], sizeof(double)));
  return rc ? -1 : 0;
}

static void acts_free(acts *a) {
  double **p = (double **)a;
  for (size_t i = 0; i < NACTS; i++) free(p[i]);
}

static double forward(const nd_ref_gpt *g, acts *a, const int32_t *inputs, const int32_t *targets, int B) {
  const int N = B * g->T, C = g->C, hs = C / g->NH;
  double *const *P = g->param;
  nd_ref_embedding(a->x, inputs, P[WTE], P[WPE], B, g->T, C, 0, g->V);
  double *tmp = malloc((size_t)N * C * sizeof *tmp);
  if (!tmp) abort();
  for (int l = 0; l < g->L; l++) {
    size_t o = (size_t)l * N * C;
    nd__ref_layernorm_fwd(a->ln1 + o, a->mean1 + (size_t)l * N, a->rstd1 + (size_t)l * N, a->x + o, P[LAYER(l, LN1_W)],
                          P[LAYER(l, LN1_B)], N, C);
    nd__ref_matmul_fwd(a->qkv + 3 * o, a->ln1 + o, P[LAYER(l, QKV_W)], P[LAYER(l, QKV_B)], N, C, 3 * C, 0);
    nd__ref_attention_fwd(a->atty + o, a->lse + (size_t)l * B * g->NH * g->T, a->qkv + 3 * o, B, g->T, g->NH,
                          hs);
    nd__ref_matmul_fwd(tmp, a->atty + o, P[LAYER(l, AP_W)], P[LAYER(l, AP_B)], N, C, C, 0);
    nd__ref_residual_fwd(a->xmid + o, a->x + o, tmp, (int64_t)N * C);
    nd__ref_layernorm_fwd(a->ln2 + o, a->mean2 + (size_t)l * N, a->rstd2 + (size_t)l * N, a->xmid + o,
                          P[LAYER(l, LN2_W)], P[LAYER(l, LN2_B)], N, C);
    nd__ref_matmul_fwd(a->fc + 4 * o, a->ln2 + o, P[LAYER(l, FC_W)], P[LAYER(l, FC_B)], N, C, 4 * C, 0);
    nd_ref_gelu(a->fcg + 4 * o, a->fc + 4 * o, (int64_t)N * 4 * C);
    nd__ref_matmul_fwd(tmp, a->fcg + 4 * o, P[LAYER(l, MP_W)], P[LAYER(l, MP_B)], N, 4 * C, C, 0);
    nd__ref_residual_fwd(a->x + o + (size_t)N * C, a->xmid + o, tmp, (int64_t)N * C);
  }
  free(tmp);
  nd__ref_layernorm_fwd(a->lnf, a->meanf, a->rstdf, a->x + (size_t)g->L * N * C, P[LNF_W(g)], P[LNF_B(g)], N, C);
  nd__ref_matmul_fwd(a->logits, a->lnf, P[WTE], NULL, N, C, g->V, 1); /* tied head: wte (V, C) transposed */
  return nd_ref_crossentropy(NULL, a->logits, targets, N, g->V) / N;
}

static void backward(nd_ref_gpt *g, const acts *a, const int32_t *inputs, const int32_t *targets, int B) {
  const int N = B * g->T, C = g->C, V = g->V, hs = C / g->NH;
  double *const *P = g->param, *const *G = g->grad;
  double *dlogits = zalloc((size_t)N * V, sizeof *dlogits), *dx = zalloc((size_t)N * C, sizeof *dx);
  double *dy = zalloc((size_t)N * 4 * C, sizeof *dy), *dz = zalloc((size_t)N * 4 * C, sizeof *dz);
  if (!dlogits || !dx || !dy || !dz) abort();
  /* mean cross-entropy: (softmax - onehot) / N */
  for (int i = 0; i < N; i++) {
    const double *row = a->logits + (size_t)i * V;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < V; j++) mx = fmax(mx, row[j]);
    for (int j = 0; j < V; j++) sum += exp(row[j] - mx);
    for (int j = 0; j < V; j++) dlogits[(size_t)i * V + j] = (exp(row[j] - mx) / sum - (j == targets[i])) / N;
  }
  /* logits = lnf . wte^T: dlnf (N, C) into dy, dwte (V, C) */
  nd__ref_matmul_bwd(dy, G[WTE], NULL, dlogits, a->lnf, P[WTE], N, C, V, 1);
  nd__ref_layernorm_bwd(dx, G[LNF_W(g)], G[LNF_B(g)], dy, a->x + (size_t)g->L * N * C, P[LNF_W(g)], a->meanf, a->rstdf,
                        N, C);
  for (int l = g->L - 1; l >= 0; l--) {
    size_t o = (size_t)l * N * C;
    /* dx is the gradient of the block's output, hence of xmid and of the MLP's output */
    memset(dy, 0, (size_t)N * 4 * C * sizeof *dy);
    memset(dz, 0, (size_t)N * 4 * C * sizeof *dz);
    nd__ref_matmul_bwd(dy, G[LAYER(l, MP_W)], G[LAYER(l, MP_B)], dx, a->fcg + 4 * o, P[LAYER(l, MP_W)], N, 4 * C, C, 0);
    gelu_bwd(dz, a->fc + 4 * o, dy, (int64_t)N * 4 * C);
    memset(dy, 0, (size_t)N * C * sizeof *dy);
    nd__ref_matmul_bwd(dy, G[LAYER(l, FC_W)], G[LAYER(l, FC_B)], dz, a->ln2 + o, P[LAYER(l, FC_W)], N, C, 4 * C, 0);
    nd__ref_layernorm_bwd(dx, G[LAYER(l, LN2_W)], G[LAYER(l, LN2_B)], dy, a->xmid + o, P[LAYER(l, LN2_W)],
                          a->mean2 + (size_t)l * N, a->rstd2 + (size_t)l * N, N, C);
    /* dx is now the gradient of xmid: of the block's input and of the attention projection's output */
    memset(dy, 0, (size_t)N * C * sizeof *dy);
    nd__ref_matmul_bwd(dy, G[LAYER(l, AP_W)], G[LAYER(l, AP_B)], dx, a->atty + o, P[LAYER(l, AP_W)], N, C, C, 0);
    memset(dz, 0, (size_t)N * 3 * C * sizeof *dz);
    nd__ref_attention_bwd(dz, dy, a->qkv + 3 * o, a->atty + o, a->lse + (size_t)l * B * g->NH * g->T, B, g->T, g->NH, hs);
    memset(dy, 0, (size_t)N * C * sizeof *dy);
    nd__ref_matmul_bwd(dy, G[LAYER(l, QKV_W)], G[LAYER(l, QKV_B)], dz, a->ln1 + o, P[LAYER(l, QKV_W)], N, C, 3 * C, 0);
    nd__ref_layernorm_bwd(dx, G[LAYER(l, LN1_W)], G[LAYER(l, LN1_B)], dy, a->x + o, P[LAYER(l, LN1_W)],
                          a->mean1 + (size_t)l * N, a->rstd1 + (size_t)l * N, N, C);
  }
  for (int i = 0; i < N; i++)
    for (int c = 0; c < C; c++) {
      G[WTE][(size_t)inputs[i] * C + c] += dx[(size_t)i * C + c];
      G[WPE][(size_t)(i % g->T) * C + c] += dx[(size_t)i * C + c];
    }
  free(dlogits);
  free(dx);
  free(dy);
  free(dz);
}

double nd_ref_gpt_step(nd_ref_gpt *g, const int32_t *inputs, const int32_t *targets, int B, double lr, double beta1,
                       double beta2, double eps, double weight_decay, double grad_clip, int t, double *grad_norm) {
  acts a;
  if (acts_alloc(&a, g, B)) abort();
  for (int i = 0; i < g->n; i++) memset(g->grad[i], 0, (size_t)g->numel[i] * sizeof(double));
  double loss = forward(g, &a, inputs, targets, B);
  backward(g, &a, inputs, targets, B);
  acts_free(&a);
  double sq = 0;
  for (int i = 0; i < g->n; i++)
    for (int64_t k = 0; k < g->numel[i]; k++) sq += g->grad[i][k] * g->grad[i][k];
  double norm = sqrt(sq), scale = grad_clip > 0 && norm > grad_clip ? grad_clip / norm : 1.0;
  for (int i = 0; i < g->n; i++)
    nd_ref_adamw(g->param[i], g->m[i], g->v[i], g->grad[i], g->numel[i], lr, beta1, beta2, eps,
                 g->decay[i] ? weight_decay : 0.0, scale, t);
  *grad_norm = norm;
  return loss;
}
