/* Causal multi-head self-attention, grouped-query when NKV < NH (each key and
 * value head serves NH / NKV query heads). Per (batch, head) it is three GEMMs
 * on strided views of qkv (row stride (NH + 2 NKV) hs) plus a masked softmax:
 *   att (T, T) = softmax_causal(q . k^T / sqrt(hs)),  out (T, hs) = att . v */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"
#include "common/share.h"
#include "kernels/cpu/simd_exp.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* In place over one (T, T) block of scores: row t keeps columns 0..t as
 * softmax probabilities, columns t+1..T-1 become 0. */
ND_VECTOR_CLONES
static void causal_softmax(float *att, int T) {
  for (int t = 0; t < T; t++) {
    float *row = att + (size_t)t * T;
    float mx = row[0];
    for (int u = 1; u <= t; u++) mx = row[u] > mx ? row[u] : mx;
#pragma omp simd
    for (int u = 0; u <= t; u++) row[u] = nd__expf_simd(row[u] - mx);
    float inv = 1.0f / nd__sum(row, t + 1);
#pragma omp simd
    for (int u = 0; u <= t; u++) row[u] *= inv;
    for (int u = t + 1; u < T; u++) row[u] = 0.0f;
  }
}

/* One call's operands. The batch's sequences are independent, so blocks of them are shared (share.h). */
typedef struct attention_args {
  float *out, *att;           // the forward's outputs
  float *dq, *dk, *dv, *datt; // the backward's outputs and scratch
  const float *q, *k, *v;     // row strides qs and kvs
  const float *dout, *att_in; // the backward's other inputs
  int qs, kvs, T, NH, NKV, hs;
} attention_args;

static void forward_sequences(void *p, int b0, int b1) {
  const attention_args *x = p;
  const int T = x->T, NH = x->NH, hs = x->hs, qs = x->qs, kvs = x->kvs, C = NH * hs, group = NH / x->NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  for (int b = b0; b < b1; b++) {
    for (int h = 0; h < NH; h++) {
      const float *qh = x->q + (size_t)b * T * qs + (size_t)h * hs;            // (T, hs), row stride qs
      const float *kh = x->k + (size_t)b * T * kvs + (size_t)(h / group) * hs; // (T, hs), row stride kvs
      const float *vh = x->v + (size_t)b * T * kvs + (size_t)(h / group) * hs;
      float *a = x->att + ((size_t)b * NH + h) * T * T;       // (T, T)
      float *o = x->out + (size_t)b * T * C + (size_t)h * hs; // (T, hs), row stride C
      // scores; the upper triangle is computed and then masked
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, qh, qs, kh, kvs, 0.0f, a, T);
      causal_softmax(a, T);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, vh, kvs, 0.0f, o, C);
    }
  }
}

void nd_attention_gqa_forward(float *out, float *att, const float *q, const float *k, const float *v, int qs, int kvs,
                              int B, int T, int NH, int NKV, int hs) {
  // out (B, T, C), att (B, NH, T, T); q (B, T, NH, hs) with row stride qs, k and v (B, T, NKV, hs) with kvs; C = NH hs
  if (T <= 0 || hs <= 0) return;
  attention_args x = {
      .out = out, .att = att, .q = q, .k = k, .v = v, .qs = qs, .kvs = kvs, .T = T, .NH = NH, .NKV = NKV, .hs = hs};
  nd__share_rows(B, 1, 4.0 * NH * T * T * hs, forward_sequences, &x);
}

void nd_attention_forward(float *out, float *att, const float *qkv, int B, int T, int NH, int hs) {
  const int C = NH * hs;
  nd_attention_gqa_forward(out, att, qkv, qkv + C, qkv + 2 * C, 3 * C, 3 * C, B, T, NH, NH, hs);
}

/* In place over one (T, T) block: datt becomes the scores' gradient,
 * att * (datt - sum(att * datt)) row by row, masked to 0 above the diagonal. */
ND_VECTOR_CLONES
static void causal_softmax_backward(float *datt, const float *att, int T) {
  for (int t = 0; t < T; t++) {
    const float *arow = att + (size_t)t * T;
    float *drow = datt + (size_t)t * T;
    float dot = nd__dot(arow, drow, t + 1);
#pragma omp simd
    for (int u = 0; u <= t; u++) drow[u] = arow[u] * (drow[u] - dot);
    for (int u = t + 1; u < T; u++) drow[u] = 0.0f;
  }
}

static void backward_sequences(void *p, int b0, int b1) {
  const attention_args *x = p;
  const int T = x->T, NH = x->NH, hs = x->hs, qs = x->qs, kvs = x->kvs, C = NH * hs, group = NH / x->NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  const float *q = x->q, *k = x->k, *v = x->v, *att = x->att_in, *dout = x->dout;
  float *dq = x->dq, *dk = x->dk, *dv = x->dv, *datt = x->datt;
  for (int b = b0; b < b1; b++) {
    for (int h = 0; h < NH; h++) {
      const size_t qo = (size_t)b * T * qs + (size_t)h * hs, ko = (size_t)b * T * kvs + (size_t)(h / group) * hs;
      const float *qh = q + qo, *kh = k + ko, *vh = v + ko; // (T, hs)
      float *dqh = dq + qo, *dkh = dk + ko, *dvh = dv + ko;
      // the first query head of a group overwrites its key/value head's gradient, the others add
      const float kv_beta = h % group ? 1.0f : 0.0f;
      const float *a = att + ((size_t)b * NH + h) * T * T;              // (T, T)
      float *da = datt + ((size_t)b * NH + h) * T * T;                  // (T, T)
      const float *dout_bh = dout + (size_t)b * T * C + (size_t)h * hs; // (T, hs), stride C
      // datt = dout . v^T;  dv = att^T . dout
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dout_bh, C, vh, kvs, 0.0f, da, T);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dout_bh, C, kv_beta, dvh, kvs);
      causal_softmax_backward(da, a, T); // dscore
      // dq = scale * dscore . k;  dk = scale * dscore^T . q
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, da, T, kh, kvs, 0.0f, dqh, qs);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, da, T, qh, qs, kv_beta, dkh, kvs);
    }
  }
}

void nd_attention_gqa_backward(float *dq, float *dk, float *dv, float *datt, const float *dout, const float *q,
                               const float *k, const float *v, const float *att, int qs, int kvs, int B, int T, int NH,
                               int NKV, int hs) {
  // dq, dk, dv overwritten, strides as q, k, v; datt (B, NH, T, T) scratch; dout (B, T, C);
  // q, k, v, att as the forward's; C = NH hs
  if (T <= 0 || hs <= 0) return;
  attention_args x = {.dq = dq,
                      .dk = dk,
                      .dv = dv,
                      .datt = datt,
                      .q = q,
                      .k = k,
                      .v = v,
                      .dout = dout,
                      .att_in = att,
                      .qs = qs,
                      .kvs = kvs,
                      .T = T,
                      .NH = NH,
                      .NKV = NKV,
                      .hs = hs};
  nd__share_rows(B, 1, 8.0 * NH * T * T * hs, backward_sequences, &x);
}

void nd_attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv, const float *att, int B,
                           int T, int NH, int hs) {
  const int C = NH * hs;
  nd_attention_gqa_backward(dqkv, dqkv + C, dqkv + 2 * C, datt, dout, qkv, qkv + C, qkv + 2 * C, att, 3 * C, 3 * C, B,
                            T, NH, NH, hs);
}
