/* Linear layer on CBLAS: out = inp . W + bias, and its two backward halves. */
#include "kernels/cpu/kernels.h"
#include "common/share.h"

#include <cblas.h>
#include <string.h>

/* Row blocks align to OpenBLAS's widest register block (16 floats of AVX-512). */
#define ND_ROW_ALIGN 16

/* v (n) = beta * v, with beta 0 meaning "overwrite" (what was there is not read). */
static void scale_or_zero(float *v, int n, float beta) {
  if (beta == 0.0f) {
    memset(v, 0, (size_t)n * sizeof(float));
  } else if (beta != 1.0f) {
    for (int i = 0; i < n; i++) v[i] *= beta;
  }
}

/* One product's operands, for blocks of its output rows (share.h): c (M, cols) from a and b. */
typedef struct gemm_args {
  float *c;
  const float *a, *b;
  int M, inner, cols, trans_b;
  float beta;
} gemm_args;

/* c rows [lo, hi) = beta c + a (M, inner) . b, b (inner, cols) or, with trans_b, (cols, inner) transposed */
static void product_rows(void *p, int lo, int hi) {
  const gemm_args *g = p;
  int k = g->inner, n = g->cols;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans, hi - lo, n, k, 1.0f,
              g->a + (size_t)lo * k, k, g->b, g->trans_b ? k : n, g->beta, g->c + (size_t)lo * n, n);
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
  gemm_args g = {out, inp, weight, M, K, N, trans_w, beta};
  nd__share_rows(M, ND_ROW_ALIGN, 2.0 * K * N, product_rows, &g);
}

void nd_matmul_backward_input(float *dinp, const float *dout, const float *weight, int M, int K, int N, int trans_w,
                              float beta) {
  // dinp (M, K), dout (M, N), weight (K, N) or (N, K) if trans_w
  if (M <= 0 || K <= 0) return;
  if (N <= 0) {
    scale_or_zero(dinp, M * K, beta);
    return;
  }
  // dinp = dout . weight^T: weight (K, N) transposed, or (N, K) as it is
  gemm_args g = {dinp, dout, weight, M, N, K, !trans_w, beta};
  nd__share_rows(M, ND_ROW_ALIGN, 2.0 * K * N, product_rows, &g);
}

/* dweight rows [lo, hi) = beta dweight + a^T . b, a (M, inner) and b (M, cols): with trans_w dweight (N, K)
 * from a = dout and b = inp, else dweight (K, N) from a = inp and b = dout */
static void weight_rows(void *p, int lo, int hi) {
  const gemm_args *g = p;
  int wa = g->inner, wb = g->cols;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, hi - lo, wb, g->M, 1.0f, g->a + lo, wa, g->b, wb, g->beta,
              g->c + (size_t)lo * wb, wb);
}

void nd_matmul_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, int M, int K, int N,
                               int trans_w, float beta) {
  // dweight (K, N) or (N, K) if trans_w, dbias (N) or NULL, dout (M, N), inp (M, K)
  if (K > 0 && N > 0) {
    if (M <= 0) {
      scale_or_zero(dweight, K * N, beta);
    } else {
      // the rows of dweight are columns of dout (trans_w) or of inp
      gemm_args g = trans_w ? (gemm_args){dweight, dout, inp, M, N, K, 0, beta}
                            : (gemm_args){dweight, inp, dout, M, K, N, 0, beta};
      nd__share_rows(g.inner, ND_ROW_ALIGN, 2.0 * M * g.cols, weight_rows, &g);
    }
  }
  if (dbias && N > 0) {
    // dbias (N): the column sums of dout
    scale_or_zero(dbias, N, beta);
    nd_add_column_sums(dbias, dout, M, N);
  }
}
