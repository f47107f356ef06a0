/* Linear layer on CBLAS: out = inp . W + bias, and its two backward halves. */
#include "kernels/cpu/kernels.h"

#include <cblas.h>
#include <string.h>

/* v (n) = beta * v, with beta 0 meaning "overwrite" (what was there is not read). */
static void scale_or_zero(float *v, int n, float beta) {
  if (beta == 0.0f) {
    memset(v, 0, (size_t)n * sizeof(float));
  } else if (beta != 1.0f) {
    for (int i = 0; i < n; i++) v[i] *= beta;
  }
}

void nd_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int M, int K, int N,
                       int trans_w) {
  // out (M, N), inp (M, K), weight (K, N) or (N, K) if trans_w, bias (N) or NULL
  if (M <= 0 || N <= 0) return;
  float beta = 0.0f;
  if (bias) {
    for (int i = 0; i < M; i++) memcpy(out + (size_t)i * N, bias, (size_t)N * sizeof(float));
    beta = 1.0f;
  }
  if (K <= 0) {
    if (!bias) memset(out, 0, (size_t)M * N * sizeof(float));
    return;
  }
  if (trans_w) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, inp, K, weight, K, beta, out, N);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, inp, K, weight, N, beta, out, N);
  }
}

void nd_matmul_backward_input(float *dinp, const float *dout, const float *weight, int M, int K, int N, int trans_w,
                              float beta) {
  // dinp (M, K), dout (M, N), weight (K, N) or (N, K) if trans_w
  if (M <= 0 || K <= 0) return;
  if (N <= 0) {
    scale_or_zero(dinp, M * K, beta);
    return;
  }
  if (trans_w) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.0f, dout, N, weight, K, beta, dinp, K);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dout, N, weight, N, beta, dinp, K);
  }
}

void nd_matmul_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, int M, int K, int N,
                               int trans_w, float beta) {
  // dweight (K, N) or (N, K) if trans_w, dbias (N) or NULL, dout (M, N), inp (M, K)
  if (K > 0 && N > 0) {
    if (M <= 0) {
      scale_or_zero(dweight, K * N, beta);
    } else if (trans_w) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.0f, dout, N, inp, K, beta, dweight, K);
    } else {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, inp, K, dout, N, beta, dweight, N);
    }
  }
  if (dbias && N > 0) {
    // dbias (N): the column sums of dout
    scale_or_zero(dbias, N, beta);
    nd_add_column_sums(dbias, dout, M, N);
  }
}
