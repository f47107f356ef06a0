/* Causal multi-head self-attention, fused: the (T, T) scores are never
 * stored. Grouped-query when NKV < NH (each key and value head serves
 * NH / NKV query heads); q, k, v are strided views (row strides qs and kvs:
 * GPT-2's fused qkv or Llama's separate buffers).
 *
 * Per (batch, head) the forward walks tiles of TQ queries x TK keys, up to
 * the diagonal, with an online softmax: each query row keeps its running max
 * m and sum l, rescales what it has accumulated in out when m grows, and at
 * the end divides by l and saves lse = m + log(l). The backward recomputes a
 * tile's probabilities exp(score - lse), and with D = rowsum(dout * out)
 * (which is rowsum(P * dP)) the scores' gradient P * (dP - D), accumulating
 * dq, dk and dv tile by tile. Each tile's products are cblas_sgemm calls;
 * the scratch is two tiles on the stack. */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"
#include "common/share.h"
#include "kernels/cpu/simd_exp.h"

#include <cblas.h>
#include <math.h>

/* Queries x keys per tile: at seq_len 64 (the quick start) one tile is the
 * whole head, as the unfused kernel's one product was. */
enum { TQ = 64, TK = 64 };

/* The (query, key) pairs a head's tiles compute: the lower triangle and the
 * diagonal tiles' upper halves, about T (T + TQ) / 2; a sequence's work for
 * nd__share_rows is that times the products' flops per pair. */
static double tile_pairs(int T) { return 0.5 * T * ((double)T + TQ); }

/* One call's operands. The batch's sequences are independent, so blocks of them are shared (share.h). */
typedef struct attention_args {
  float *out, *lse;         // the forward's outputs
  float *dq, *dk, *dv;      // the backward's outputs
  const float *q, *k, *v;   // row strides qs and kvs
  const float *dout, *o_in; // the backward's other inputs (o_in: the forward's out)
  const float *lse_in;
  int qs, kvs, T, NH, NKV, hs;
} attention_args;

/* The keys of tile [j0, j0 + TK) that query tile [i0, i0 + nq) sees: none past
 * its last query, none past T. */
static int tile_keys(int i0, int nq, int j0) {
  int last = i0 + nq; // one past the last query's last key
  return last - j0 < TK ? last - j0 : TK;
}

/* The online softmax over one tile of scores s (nq, nk), row stride TK,
 * queries from i0, keys from j0: s becomes the unnormalized probabilities
 * exp(s - m) (0 past the diagonal), m and l advance, and the rows of o
 * (row stride os, hs wide) already accumulated are rescaled to the new max. */
ND_VECTOR_CLONES
static void online_softmax(float *s, float *m, float *l, float *o, int os, int hs, int i0, int nq, int j0, int nk) {
  for (int r = 0; r < nq; r++) {
    float *row = s + (size_t)r * TK;
    const int n = i0 + r - j0 + 1 < nk ? i0 + r - j0 + 1 : nk; // keys j0 .. i0 + r
    float mx = m[r];
    for (int u = 0; u < n; u++) mx = row[u] > mx ? row[u] : mx;
#pragma omp simd
    for (int u = 0; u < n; u++) row[u] = nd__expf_simd(row[u] - mx);
    for (int u = n; u < nk; u++) row[u] = 0.0f;
    if (j0 > 0) { // the first tile's o is not accumulated yet (it is overwritten)
      const float c = nd__expf_simd(m[r] - mx);
      l[r] *= c;
      float *orow = o + (size_t)r * os;
#pragma omp simd
      for (int d = 0; d < hs; d++) orow[d] *= c;
    }
    m[r] = mx;
    l[r] += nd__sum(row, n);
  }
}

static void forward_head(const attention_args *x, int b, int h) {
  const int T = x->T, NH = x->NH, hs = x->hs, qs = x->qs, kvs = x->kvs, C = NH * hs, group = NH / x->NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  const float *qh = x->q + (size_t)b * T * qs + (size_t)h * hs;            // (T, hs), row stride qs
  const float *kh = x->k + (size_t)b * T * kvs + (size_t)(h / group) * hs; // (T, hs), row stride kvs
  const float *vh = x->v + (size_t)b * T * kvs + (size_t)(h / group) * hs;
  float *oh = x->out + (size_t)b * T * C + (size_t)h * hs; // (T, hs), row stride C
  float *lh = x->lse + ((size_t)b * NH + h) * T;           // (T)
  float s[TQ * TK], m[TQ], l[TQ];
  for (int i0 = 0; i0 < T; i0 += TQ) {
    const int nq = T - i0 < TQ ? T - i0 : TQ;
    float *o = oh + (size_t)i0 * C;
    for (int r = 0; r < nq; r++) m[r] = -INFINITY, l[r] = 0.0f;
    for (int j0 = 0; j0 < i0 + nq; j0 += TK) {
      const int nk = tile_keys(i0, nq, j0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, scale, qh + (size_t)i0 * qs, qs,
                  kh + (size_t)j0 * kvs, kvs, 0.0f, s, TK);
      online_softmax(s, m, l, o, C, hs, i0, nq, j0, nk);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hs, nk, 1.0f, s, TK, vh + (size_t)j0 * kvs, kvs,
                  j0 > 0 ? 1.0f : 0.0f, o, C);
    }
    for (int r = 0; r < nq; r++) {
      const float inv = 1.0f / l[r];
      float *orow = o + (size_t)r * C;
      for (int d = 0; d < hs; d++) orow[d] *= inv;
      lh[i0 + r] = m[r] + logf(l[r]);
    }
  }
}

static void forward_sequences(void *p, int b0, int b1) {
  const attention_args *x = p;
  for (int b = b0; b < b1; b++)
    for (int h = 0; h < x->NH; h++) forward_head(x, b, h);
}

void nd_attention_gqa_forward(float *out, float *lse, const float *q, const float *k, const float *v, int qs, int kvs,
                              int B, int T, int NH, int NKV, int hs) {
  // out (B, T, C), lse (B, NH, T); q (B, T, NH, hs) with row stride qs, k and v (B, T, NKV, hs) with kvs; C = NH hs
  if (T <= 0 || hs <= 0) return;
  attention_args x = {
      .out = out, .lse = lse, .q = q, .k = k, .v = v, .qs = qs, .kvs = kvs, .T = T, .NH = NH, .NKV = NKV, .hs = hs};
  nd__share_rows(B, 1, 4.0 * hs * NH * tile_pairs(T), forward_sequences, &x); // 2 products
}

void nd_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int NH, int hs) {
  const int C = NH * hs;
  nd_attention_gqa_forward(out, lse, qkv, qkv + C, qkv + 2 * C, 3 * C, 3 * C, B, T, NH, NH, hs);
}

/* One tile of the backward, queries from i0, keys from j0: p holds the
 * scores (nq, nk) and becomes the probabilities exp(s - lse), 0 past the
 * diagonal; dp holds dout . v^T and becomes the scores' gradient p (dp - D). */
ND_VECTOR_CLONES
static void softmax_tile_backward(float *p, float *dp, const float *lse, const float *D, int i0, int nq, int j0,
                                  int nk) {
  for (int r = 0; r < nq; r++) {
    float *prow = p + (size_t)r * TK, *drow = dp + (size_t)r * TK;
    const int n = i0 + r - j0 + 1 < nk ? i0 + r - j0 + 1 : nk;
    const float lr = lse[r], Dr = D[r];
#pragma omp simd
    for (int u = 0; u < n; u++) {
      prow[u] = nd__expf_simd(prow[u] - lr);
      drow[u] = prow[u] * (drow[u] - Dr);
    }
    for (int u = n; u < nk; u++) prow[u] = drow[u] = 0.0f;
  }
}

/* Rows [0, T) of a (T, hs) view with row stride ld set to 0. */
static void zero_rows(float *a, int T, int hs, int ld) {
  for (int t = 0; t < T; t++)
    for (int d = 0; d < hs; d++) a[(size_t)t * ld + d] = 0.0f;
}

static void backward_head(const attention_args *x, int b, int h) {
  const int T = x->T, NH = x->NH, hs = x->hs, qs = x->qs, kvs = x->kvs, C = NH * hs, group = NH / x->NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  const size_t qo = (size_t)b * T * qs + (size_t)h * hs, ko = (size_t)b * T * kvs + (size_t)(h / group) * hs;
  const float *qh = x->q + qo, *kh = x->k + ko, *vh = x->v + ko; // (T, hs)
  float *dqh = x->dq + qo, *dkh = x->dk + ko, *dvh = x->dv + ko;
  const float *dyh = x->dout + (size_t)b * T * C + (size_t)h * hs; // (T, hs), row stride C
  const float *oh = x->o_in + (size_t)b * T * C + (size_t)h * hs;
  const float *lh = x->lse_in + ((size_t)b * NH + h) * T;
  // the first query head of a group overwrites its key/value head's gradient, the others add
  if (h % group == 0) zero_rows(dkh, T, hs, kvs), zero_rows(dvh, T, hs, kvs);
  float p[TQ * TK], dp[TQ * TK], D[TQ];
  for (int i0 = 0; i0 < T; i0 += TQ) {
    const int nq = T - i0 < TQ ? T - i0 : TQ;
    const float *qi = qh + (size_t)i0 * qs, *dyi = dyh + (size_t)i0 * C;
    for (int r = 0; r < nq; r++) D[r] = nd__dot(dyi + (size_t)r * C, oh + (size_t)(i0 + r) * C, hs);
    for (int j0 = 0; j0 < i0 + nq; j0 += TK) {
      const int nk = tile_keys(i0, nq, j0);
      const float *kj = kh + (size_t)j0 * kvs, *vj = vh + (size_t)j0 * kvs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, scale, qi, qs, kj, kvs, 0.0f, p, TK);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, 1.0f, dyi, C, vj, kvs, 0.0f, dp, TK);
      softmax_tile_backward(p, dp, lh + i0, D, i0, nq, j0, nk);
      // dv += p^T . dout;  dq (+)= scale * dscore . k;  dk += scale * dscore^T . q
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, nq, 1.0f, p, TK, dyi, C, 1.0f,
                  dvh + (size_t)j0 * kvs, kvs);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hs, nk, scale, dp, TK, kj, kvs, j0 > 0 ? 1.0f : 0.0f,
                  dqh + (size_t)i0 * qs, qs);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, nq, scale, dp, TK, qi, qs, 1.0f,
                  dkh + (size_t)j0 * kvs, kvs);
    }
  }
}

static void backward_sequences(void *p, int b0, int b1) {
  const attention_args *x = p;
  for (int b = b0; b < b1; b++)
    for (int h = 0; h < x->NH; h++) backward_head(x, b, h);
}

void nd_attention_gqa_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                               const float *v, const float *out, const float *lse, int qs, int kvs, int B, int T, int NH,
                               int NKV, int hs) {
  // dq, dk, dv overwritten, strides as q, k, v; dout and out (B, T, C); lse (B, NH, T); C = NH hs
  if (T <= 0 || hs <= 0) return;
  attention_args x = {.dq = dq,
                      .dk = dk,
                      .dv = dv,
                      .q = q,
                      .k = k,
                      .v = v,
                      .dout = dout,
                      .o_in = out,
                      .lse_in = lse,
                      .qs = qs,
                      .kvs = kvs,
                      .T = T,
                      .NH = NH,
                      .NKV = NKV,
                      .hs = hs};
  nd__share_rows(B, 1, 10.0 * hs * NH * tile_pairs(T), backward_sequences, &x); // 5 products
}

void nd_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out, const float *lse, int B,
                           int T, int NH, int hs) {
  const int C = NH * hs;
  nd_attention_gqa_backward(dqkv, dqkv + C, dqkv + 2 * C, dout, qkv, qkv + C, qkv + 2 * C, out, lse, 3 * C, 3 * C, B,
                            T, NH, NH, hs);
}
