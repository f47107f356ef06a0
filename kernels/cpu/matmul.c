/* Linear layer on CBLAS: out = inp . W + bias, and its two backward halves. */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/share.h"

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

/* One product's operands, for a block of its output rows (share.h). */
typedef struct gemm_args {
  float *c;
  const float *a, *b;
  int M, K, N, trans_w;
  float beta;
} gemm_args;

/* out rows [lo, hi) (M, N) = beta out + inp (M, K) . weight */
static void forward_rows(void *p, int lo, int hi) {
  const gemm_args *g = p;
  int rows = hi - lo, K = g->K, N = g->N;
  const float *inp = g->a + (size_t)lo * K;
  float *out = g->c + (size_t)lo * N;
  if (g->trans_w)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, N, K, 1.0f, inp, K, g->b, K, g->beta, out, N);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, N, K, 1.0f, inp, K, g->b, N, g->beta, out, N);
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
  nd__share_rows(M, ND_ROW_ALIGN, 2.0 * K * N, forward_rows, &g);
}

/* dinp rows [lo, hi) (M, K) = beta dinp + dout (M, N) . weight^T */
static void input_rows(void *p, int lo, int hi) {
  const gemm_args *g = p;
  int rows = hi - lo, K = g->K, N = g->N;
  const float *dout = g->a + (size_t)lo * N;
  float *dinp = g->c + (size_t)lo * K;
  if (g->trans_w)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, K, N, 1.0f, dout, N, g->b, K, g->beta, dinp, K);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, K, N, 1.0f, dout, N, g->b, N, g->beta, dinp, K);
}

void nd_matmul_backward_input(float *dinp, const float *dout, const float *weight, int M, int K, int N, int trans_w,
                              float beta) {
  // dinp (M, K), dout (M, N), weight (K, N) or (N, K) if trans_w
  if (M <= 0 || K <= 0) return;
  if (N <= 0) {
    scale_or_zero(dinp, M * K, beta);
    return;
  }
  gemm_args g = {dinp, dout, weight, M, K, N, trans_w, beta};
  nd__share_rows(M, ND_ROW_ALIGN, 2.0 * K * N, input_rows, &g);
}

/* dweight rows [lo, hi) = beta dweight + a^T . b, a (M, g->K) and b (M, g->N): with trans_w dweight (N, K)
 * from a = dout and b = inp, else dweight (K, N) from a = inp and b = dout */
static void weight_rows(void *p, int lo, int hi) {
  const gemm_args *g = p;
  int rows = hi - lo, M = g->M, wa = g->K, wb = g->N;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rows, wb, M, 1.0f, g->a + lo, wa, g->b, wb, g->beta,
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
      gemm_args g = trans_w ? (gemm_args){dweight, dout, inp, M, N, K, 1, beta}
                            : (gemm_args){dweight, inp, dout, M, K, N, 0, beta};
      nd__share_rows(g.K, ND_ROW_ALIGN, 2.0 * M * g.N, weight_rows, &g);
    }
  }
  if (dbias && N > 0) {
    // dbias (N): the column sums of dout
    scale_or_zero(dbias, N, beta);
    nd_add_column_sums(dbias, dout, M, N);
  }
}
