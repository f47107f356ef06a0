/* Causal self-attention, fused (fp32): the (T, T) scores are never stored,
 * as in kernels/cpu/attention.c. Grouped-query when NKV < NH (query head h
 * reads key/value head h / (NH / NKV)); q, k, v are strided views (GPT-2's
 * fused qkv, Llama's separate buffers).
 *
 * One thread per query row (forward, dq) or key row (dk, dv), its vectors in
 * registers (D, a compile-time bound on hs), the other side's rows staged
 * through shared memory in tiles:
 * - forward: a block per (query tile, head, batch); key/value tiles up to the
 *   diagonal, an online softmax per row (running max m and sum l); out = o / l,
 *   lse = m + log(l);
 * - backward: D = rowsum(dout * out) per row; dq by query rows over the key
 *   tiles, dk and dv by key rows over the query tiles and the group's query
 *   heads in head order, each recomputing p = exp(score - lse) and the scores'
 *   gradient p (dout . v - D). No atomics: the sums are in a fixed order. */
#include <math.h>

#include "kernels/cuda/common.cuh"

enum { ROWS = 64 }; // threads (rows) per block

/* rows of the other side per shared tile: two (TILE, D) tiles in 32 KiB */
template <int D> __host__ __device__ constexpr int tile_rows() { return D <= 64 ? 64 : 4096 / D; }

struct views {
  const float *q, *k, *v; // (B, T, NH | NKV, hs) with row strides qs, kvs
  int qs, kvs, T, NH, NKV, hs;
  float scale;
};

/* Row t of head h (of query heads, or of key/value heads) of batch b in a view with row stride ld. */
__device__ static inline int64_t at(int b, int t, int h, int T, int ld, int hs) {
  return ((int64_t)b * T + t) * ld + (int64_t)h * hs;
}

template <int D> __device__ static void load_row(float *r, const float *src, int hs) {
#pragma unroll
  for (int d = 0; d < D; d++) r[d] = d < hs ? src[d] : 0.0f;
}

/* tile (n, D) of rows [t0, t0 + n) of head h into shared memory, zero past hs */
template <int D>
__device__ static void stage(float *tile, const float *x, int b, int t0, int n, int h, int T, int ld, int hs) {
  for (int i = threadIdx.x; i < n * D; i += blockDim.x) {
    int r = i / D, d = i % D;
    tile[i] = d < hs ? x[at(b, t0 + r, h, T, ld, hs) + d] : 0.0f;
  }
}

template <int D> __device__ static float dot(const float *a, const float *b) {
  float s = 0.0f;
#pragma unroll
  for (int d = 0; d < D; d++) s += a[d] * b[d];
  return s;
}

template <int D> __global__ static void forward(float *out, float *lse, views x) {
  constexpr int TK = tile_rows<D>();
  __shared__ float ks[TK * D], vs[TK * D];
  const int b = blockIdx.z, h = blockIdx.y, g = h / (x.NH / x.NKV), i0 = blockIdx.x * ROWS, t = i0 + threadIdx.x;
  const int C = x.NH * x.hs;
  float q[D], o[D], m = -INFINITY, l = 0.0f;
  if (t < x.T) load_row<D>(q, x.q + at(b, t, h, x.T, x.qs, x.hs), x.hs);
#pragma unroll
  for (int d = 0; d < D; d++) o[d] = 0.0f;
  const int last = min(i0 + ROWS, x.T); // one past the tile's last query
  for (int j0 = 0; j0 < last; j0 += TK) {
    const int n = min(TK, last - j0);
    __syncthreads(); // the previous tile is read
    stage<D>(ks, x.k, b, j0, n, g, x.T, x.kvs, x.hs);
    stage<D>(vs, x.v, b, j0, n, g, x.T, x.kvs, x.hs);
    __syncthreads();
    if (t >= x.T) continue;
    for (int u = 0; u < n && j0 + u <= t; u++) {
      const float s = dot<D>(q, ks + u * D) * x.scale;
      const float *vu = vs + u * D;
      if (s > m) { // a new max: what is accumulated shrinks by exp(m - s)
        const float c = expf(m - s);
        l = l * c + 1.0f;
#pragma unroll
        for (int d = 0; d < D; d++) o[d] = o[d] * c + vu[d];
        m = s;
      } else {
        const float p = expf(s - m);
        l += p;
#pragma unroll
        for (int d = 0; d < D; d++) o[d] += p * vu[d];
      }
    }
  }
  if (t >= x.T) return;
  const float inv = 1.0f / l;
  float *orow = out + at(b, t, h, x.T, C, x.hs);
#pragma unroll
  for (int d = 0; d < D; d++)
    if (d < x.hs) orow[d] = o[d] * inv;
  lse[((int64_t)b * x.NH + h) * x.T + t] = m + logf(l);
}

/* D (B, NH, T) = rowsum(dout * out), one thread per row */
__global__ static void row_dots(float *Dr, const float *dout, const float *out, int B, int T, int NH, int hs) {
  const int64_t rows = (int64_t)B * NH * T;
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x) {
    const int t = (int)(r % T), h = (int)(r / T % NH), b = (int)(r / T / NH);
    const int64_t o = at(b, t, h, T, NH * hs, hs);
    float s = 0.0f;
    for (int d = 0; d < hs; d++) s += dout[o + d] * out[o + d];
    Dr[r] = s;
  }
}

/* dq, one thread per query row: over the key tiles up to the diagonal */
template <int D> __global__ static void backward_dq(float *dq, const float *dout, const float *lse, const float *Dr, views x) {
  constexpr int TK = tile_rows<D>();
  __shared__ float ks[TK * D], vs[TK * D];
  const int b = blockIdx.z, h = blockIdx.y, g = h / (x.NH / x.NKV), i0 = blockIdx.x * ROWS, t = i0 + threadIdx.x;
  const int C = x.NH * x.hs;
  const int64_t row = ((int64_t)b * x.NH + h) * x.T + t;
  float q[D], dy[D], acc[D], lr = 0.0f, Dt = 0.0f;
  if (t < x.T) {
    load_row<D>(q, x.q + at(b, t, h, x.T, x.qs, x.hs), x.hs);
    load_row<D>(dy, dout + at(b, t, h, x.T, C, x.hs), x.hs);
    lr = lse[row], Dt = Dr[row];
  }
#pragma unroll
  for (int d = 0; d < D; d++) acc[d] = 0.0f;
  const int last = min(i0 + ROWS, x.T);
  for (int j0 = 0; j0 < last; j0 += TK) {
    const int n = min(TK, last - j0);
    __syncthreads();
    stage<D>(ks, x.k, b, j0, n, g, x.T, x.kvs, x.hs);
    stage<D>(vs, x.v, b, j0, n, g, x.T, x.kvs, x.hs);
    __syncthreads();
    if (t >= x.T) continue;
    for (int u = 0; u < n && j0 + u <= t; u++) {
      const float p = expf(dot<D>(q, ks + u * D) * x.scale - lr);
      const float ds = p * (dot<D>(dy, vs + u * D) - Dt) * x.scale;
#pragma unroll
      for (int d = 0; d < D; d++) acc[d] += ds * ks[u * D + d];
    }
  }
  if (t >= x.T) return;
  float *r = dq + at(b, t, h, x.T, x.qs, x.hs);
#pragma unroll
  for (int d = 0; d < D; d++)
    if (d < x.hs) r[d] = acc[d];
}

/* dk and dv, one thread per key row of key/value head g: over the group's
 * query heads in order and their query tiles from the diagonal on */
template <int D>
__global__ static void backward_dkv(float *dk, float *dv, const float *dout, const float *lse, const float *Dr, views x) {
  constexpr int TQ = tile_rows<D>();
  __shared__ float qs_[TQ * D], ys[TQ * D], ls[TQ], Ds[TQ];
  const int b = blockIdx.z, g = blockIdx.y, j0 = blockIdx.x * ROWS, u = j0 + threadIdx.x, group = x.NH / x.NKV;
  const int C = x.NH * x.hs;
  float k[D], v[D], ak[D], av[D];
  if (u < x.T) {
    load_row<D>(k, x.k + at(b, u, g, x.T, x.kvs, x.hs), x.hs);
    load_row<D>(v, x.v + at(b, u, g, x.T, x.kvs, x.hs), x.hs);
  }
#pragma unroll
  for (int d = 0; d < D; d++) ak[d] = av[d] = 0.0f;
  for (int h = g * group; h < (g + 1) * group; h++)
    for (int i0 = j0 - j0 % TQ; i0 < x.T; i0 += TQ) { // query tiles that reach this key tile
      const int n = min(TQ, x.T - i0);
      __syncthreads();
      stage<D>(qs_, x.q, b, i0, n, h, x.T, x.qs, x.hs);
      stage<D>(ys, dout, b, i0, n, h, x.T, C, x.hs);
      for (int r = threadIdx.x; r < n; r += blockDim.x) {
        const int64_t row = ((int64_t)b * x.NH + h) * x.T + i0 + r;
        ls[r] = lse[row], Ds[r] = Dr[row];
      }
      __syncthreads();
      if (u >= x.T) continue;
      for (int r = 0; r < n; r++) {
        if (i0 + r < u) continue; // query before the key: masked
        const float p = expf(dot<D>(k, qs_ + r * D) * x.scale - ls[r]);
        const float ds = p * (dot<D>(v, ys + r * D) - Ds[r]) * x.scale;
#pragma unroll
        for (int d = 0; d < D; d++) {
          av[d] += p * ys[r * D + d];
          ak[d] += ds * qs_[r * D + d];
        }
      }
    }
  if (u >= x.T) return;
  float *rk = dk + at(b, u, g, x.T, x.kvs, x.hs), *rv = dv + at(b, u, g, x.T, x.kvs, x.hs);
#pragma unroll
  for (int d = 0; d < D; d++)
    if (d < x.hs) rk[d] = ak[d], rv[d] = av[d];
}

/* The launches for one bound D >= hs. */
template <int D> static int forward_d(cudaStream_t s, float *out, float *lse, const views &x, int B) {
  dim3 grid((unsigned)((x.T + ROWS - 1) / ROWS), (unsigned)x.NH, (unsigned)B);
  forward<D><<<grid, ROWS, 0, s>>>(out, lse, x);
  return nd_cuda_launched();
}

template <int D>
static int backward_d(cudaStream_t s, float *dq, float *dk, float *dv, const float *dout, const float *lse,
                      const float *Dr, const views &x, int B) {
  const unsigned tiles = (unsigned)((x.T + ROWS - 1) / ROWS);
  backward_dq<D><<<dim3(tiles, (unsigned)x.NH, (unsigned)B), ROWS, 0, s>>>(dq, dout, lse, Dr, x);
  if (int rc = nd_cuda_launched()) return rc;
  backward_dkv<D><<<dim3(tiles, (unsigned)x.NKV, (unsigned)B), ROWS, 0, s>>>(dk, dv, dout, lse, Dr, x);
  return nd_cuda_launched();
}

/* hs past the largest bound is refused (no model here comes near it) */
#define ND_ATT_DISPATCH(hs, call)                                                                  \
  ((hs) <= 16 ? call(16) : (hs) <= 32 ? call(32) : (hs) <= 64 ? call(64) : (hs) <= 128 ? call(128) \
                                                                         : (hs) <= 256 ? call(256) \
                                                                                       : (int)cudaErrorInvalidValue)

int nd_cuda_attention_gqa_forward(cudaStream_t s, float *out, float *lse, const float *q, const float *k,
                                  const float *v, int qs, int kvs, int B, int T, int NH, int NKV, int hs) {
  // out (B, T, C), lse (B, NH, T); q (B, T, NH, hs) with row stride qs, k and v (B, T, NKV, hs) with kvs; C = NH hs
  if (T <= 0 || hs <= 0 || B <= 0) return 0;
  const views x = {q, k, v, qs, kvs, T, NH, NKV, hs, 1.0f / sqrtf((float)hs)};
#define FWD(d) forward_d<d>(s, out, lse, x, B)
  return ND_ATT_DISPATCH(hs, FWD);
#undef FWD
}

int nd_cuda_attention_gqa_backward(cudaStream_t s, float *dq, float *dk, float *dv, const float *dout, const float *q,
                                   const float *k, const float *v, const float *out, const float *lse, int qs, int kvs,
                                   int B, int T, int NH, int NKV, int hs) {
  // dq, dk, dv overwritten, strides as q, k, v; dout and out (B, T, C); lse (B, NH, T); C = NH hs
  if (T <= 0 || hs <= 0 || B <= 0) return 0;
  const views x = {q, k, v, qs, kvs, T, NH, NKV, hs, 1.0f / sqrtf((float)hs)};
  float *Dr; // rowsum(dout * out) (B, NH, T), scratch of this call in stream order
  int rc = (int)cudaMallocAsync((void **)&Dr, (size_t)B * NH * T * sizeof *Dr, s);
  if (rc) return rc;
  row_dots<<<nd_cuda_blocks((int64_t)B * NH * T), ND_CUDA_THREADS, 0, s>>>(Dr, dout, out, B, T, NH, hs);
  rc = nd_cuda_launched();
#define BWD(d) backward_d<d>(s, dq, dk, dv, dout, lse, Dr, x, B)
  if (!rc) rc = ND_ATT_DISPATCH(hs, BWD);
#undef BWD
  int frc = (int)cudaFreeAsync(Dr, s);
  return rc ? rc : frc;
}

int nd_cuda_attention_forward(cudaStream_t s, float *out, float *lse, const float *qkv, int B, int T, int NH, int hs) {
  // qkv (B, T, 3C): q, k, v side by side in each row
  const int C = NH * hs;
  return nd_cuda_attention_gqa_forward(s, out, lse, qkv, qkv + C, qkv + 2 * C, 3 * C, 3 * C, B, T, NH, NH, hs);
}

int nd_cuda_attention_backward(cudaStream_t s, float *dqkv, const float *dout, const float *qkv, const float *out,
                               const float *lse, int B, int T, int NH, int hs) {
  const int C = NH * hs;
  return nd_cuda_attention_gqa_backward(s, dqkv, dqkv + C, dqkv + 2 * C, dout, qkv, qkv + C, qkv + 2 * C, out, lse,
                                        3 * C, 3 * C, B, T, NH, NH, hs);
}
