/* Causal multi-head self-attention. Per (batch, head) it is three GEMMs on
 * strided views of qkv (row stride 3C) plus a masked softmax:
 *   att (T, T) = softmax_causal(q . k^T / sqrt(hs)),  out (T, hs) = att . v */
#include "kernels/cpu/kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* In place over one (T, T) block of scores: row t keeps columns 0..t as
 * softmax probabilities, columns t+1..T-1 become 0. */
static void causal_softmax(float *att, int T) {
  for (int t = 0; t < T; t++) {
    float *row = att + (size_t)t * T;
    float mx = row[0];
    for (int u = 1; u <= t; u++) mx = row[u] > mx ? row[u] : mx;
    float sum = 0.0f;
    for (int u = 0; u <= t; u++) {
      row[u] = expf(row[u] - mx);
      sum += row[u];
    }
    float inv = 1.0f / sum;
    for (int u = 0; u <= t; u++) row[u] *= inv;
    for (int u = t + 1; u < T; u++) row[u] = 0.0f;
  }
}

void nd_attention_forward(float *out, float *att, const float *qkv, int B, int T, int NH, int hs) {
  // out (B, T, C), att (B, NH, T, T), qkv (B, T, 3C), C = NH * hs
  const int C = NH * hs, C3 = 3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  if (T <= 0 || hs <= 0) return;
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hs;  // (T, hs), row stride 3C
      const float *k = q + C;
      const float *v = q + 2 * C;
      float *a = att + ((size_t)b * NH + h) * T * T;                // (T, T)
      float *o = out + (size_t)b * T * C + (size_t)h * hs;          // (T, hs), row stride C
      // scores; the upper triangle is computed and then masked
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3,
                  0.0f, a, T);
      causal_softmax(a, T);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, C3,
                  0.0f, o, C);
    }
  }
}

void nd_attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv,
                           const float *att, int B, int T, int NH, int hs) {
  // dqkv (B, T, 3C) overwritten, datt (B, NH, T, T) scratch, dout (B, T, C),
  // qkv (B, T, 3C), att (B, NH, T, T); C = NH * hs
  const int C = NH * hs, C3 = 3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  if (T <= 0 || hs <= 0) return;
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const size_t qoff = (size_t)b * T * C3 + (size_t)h * hs;
      const float *q = qkv + qoff, *k = q + C, *v = q + 2 * C;     // (T, hs), stride 3C
      float *dq = dqkv + qoff, *dk = dq + C, *dv = dq + 2 * C;     // (T, hs), stride 3C
      const float *a = att + ((size_t)b * NH + h) * T * T;          // (T, T)
      float *da = datt + ((size_t)b * NH + h) * T * T;              // (T, T)
      const float *dout_bh = dout + (size_t)b * T * C + (size_t)h * hs;  // (T, hs), stride C
      // datt = dout . v^T;  dv = att^T . dout
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dout_bh, C, v, C3,
                  0.0f, da, T);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dout_bh, C,
                  0.0f, dv, C3);
      // softmax backward in place: dscore = att * (datt - sum(att * datt)), masked to 0
      for (int t = 0; t < T; t++) {
        const float *arow = a + (size_t)t * T;
        float *drow = da + (size_t)t * T;
        float dot = 0.0f;
        for (int u = 0; u <= t; u++) dot += arow[u] * drow[u];
        for (int u = 0; u <= t; u++) drow[u] = arow[u] * (drow[u] - dot);
        for (int u = t + 1; u < T; u++) drow[u] = 0.0f;
      }
      // dq = scale * dscore . k;  dk = scale * dscore^T . q
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, da, T, k, C3,
                  0.0f, dq, C3);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, da, T, q, C3,
                  0.0f, dk, C3);
    }
  }
}
