/* OpenCL C kernels of the GPT step (the GEMMs are CLBlast's). Row-major,
 * float. Each work-item owns its outputs, and every sum runs in a fixed order
 * inside one work-item, so results do not depend on the device's scheduling.
 * Embedded into the library at build time (kernels/opencl/source.inc). */

#define LN_EPS 1e-5f
#define GELU_S 0.7978845608028654f
#define GELU_A 0.044715f

/* v (n) = beta * v; beta 0 overwrites (garbage, NaN included, is not read) */
__kernel void nd_scale(__global float *v, float beta) {
  size_t i = get_global_id(0);
  v[i] = beta == 0.0f ? 0.0f : beta * v[i];
}

/* out (M, N): every row = bias (N) */
__kernel void nd_bias_rows(__global float *out, __global const float *bias, int N) {
  size_t i = get_global_id(0);
  out[i] = bias[i % (size_t)N];
}

/* dbias (N) = beta * dbias + column sums of dout (M, N); one work-item per column */
__kernel void nd_colsum(__global float *dbias, __global const float *dout, int M, int N, float beta) {
  int j = get_global_id(0);
  float s = beta == 0.0f ? 0.0f : beta * dbias[j];
  for (int i = 0; i < M; i++) s += dout[(size_t)i * N + j];
  dbias[j] = s;
}

/* out (n) = a + b */
__kernel void nd_residual(__global float *out, __global const float *a, __global const float *b) {
  size_t i = get_global_id(0);
  out[i] = a[i] + b[i];
}

/* out (n) += part (n): one step of the rank-ordered sum of a collective */
__kernel void nd_accumulate(__global float *out, __global const float *part) {
  size_t i = get_global_id(0);
  out[i] += part[i];
}

__kernel void nd_gelu_fwd(__global float *out, __global const float *inp) {
  size_t i = get_global_id(0);
  float x = inp[i];
  out[i] = 0.5f * x * (1.0f + tanh(GELU_S * (x + GELU_A * x * x * x)));
}

__kernel void nd_gelu_bwd(__global float *dinp, __global const float *inp, __global const float *dout) {
  size_t i = get_global_id(0);
  float x = inp[i];
  float th = tanh(GELU_S * (x + GELU_A * x * x * x));
  float du = GELU_S * (1.0f + 3.0f * GELU_A * x * x);
  dinp[i] = (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du) * dout[i];
}

/* one work-item per row: out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C) */
__kernel void nd_ln_fwd(__global float *out, __global float *mean, __global float *rstd, __global const float *inp,
                        __global const float *w, __global const float *b, int C) {
  size_t i = get_global_id(0);
  __global const float *x = inp + i * C;
  __global float *y = out + i * C;
  float m = 0.0f;
  for (int j = 0; j < C; j++) m += x[j];
  m /= (float)C;
  float var = 0.0f;
  for (int j = 0; j < C; j++) var += (x[j] - m) * (x[j] - m);
  float s = 1.0f / sqrt(var / (float)C + LN_EPS);
  for (int j = 0; j < C; j++) y[j] = (x[j] - m) * s * w[j] + b[j];
  mean[i] = m;
  rstd[i] = s;
}

/* one work-item per row: dinp (N, C) = [dskip +] d(LN)/d(inp) . dout */
__kernel void nd_ln_bwd_in(__global float *dinp, __global const float *dskip, int has_skip, __global const float *dout,
                           __global const float *inp, __global const float *w, __global const float *mean,
                           __global const float *rstd, int C) {
  size_t i = get_global_id(0);
  __global const float *x = inp + i * C, *dy = dout + i * C;
  float m = mean[i], s = rstd[i], dmean = 0.0f, dxmean = 0.0f;
  for (int j = 0; j < C; j++) {
    float d = dy[j] * w[j];
    dmean += d;
    dxmean += d * (x[j] - m) * s;
  }
  dmean /= (float)C;
  dxmean /= (float)C;
  for (int j = 0; j < C; j++) {
    float g = s * (dy[j] * w[j] - dmean - (x[j] - m) * s * dxmean);
    dinp[i * C + j] = has_skip ? dskip[i * C + j] + g : g;
  }
}

/* one work-item per column: dweight (C), dbias (C) = beta * previous + sums over the N rows */
__kernel void nd_ln_bwd_w(__global float *dw, __global float *db, __global const float *dout,
                          __global const float *inp, __global const float *mean, __global const float *rstd, int N,
                          int C, float beta) {
  int j = get_global_id(0);
  float sw = beta == 0.0f ? 0.0f : beta * dw[j], sb = beta == 0.0f ? 0.0f : beta * db[j];
  for (int i = 0; i < N; i++) {
    float dy = dout[(size_t)i * C + j];
    sw += dy * (inp[(size_t)i * C + j] - mean[i]) * rstd[i];
    sb += dy;
  }
  dw[j] = sw;
  db[j] = sb;
}

/* Attention, per (batch, head), grouped-query when NKV < NH: query head h
 * reads key/value head h / (NH / NKV). q is (B, T, NH, hs) with row stride qs
 * from element qo of its buffer, k and v (B, T, NKV, hs) with row stride kvs
 * from ko and vo: GPT-2's fused qkv (B, T, 3C) is q, k, v at 0, C, 2C with
 * stride 3C, Llama's separate buffers have offset 0. att (B, NH, T, T) is a
 * call's scratch (the graph keeps only lse (B, NH, T), each row's
 * log-sum-exp); out and dout (B, T, C), C = NH * hs. */

/* global (B * NH, T, T): scores, masked to 0 above the diagonal */
__kernel void nd_att_scores(__global float *att, __global const float *q, int qo, int qs, __global const float *k,
                            int ko, int kvs, int T, int NH, int NKV, int hs, float scale) {
  int bh = get_global_id(0), t = get_global_id(1), u = get_global_id(2);
  int b = bh / NH, h = bh % NH, g = h / (NH / NKV);
  float s = 0.0f;
  if (u <= t) {
    __global const float *qr = q + qo + ((size_t)b * T + t) * qs + h * hs;
    __global const float *kr = k + ko + ((size_t)b * T + u) * kvs + g * hs;
    for (int d = 0; d < hs; d++) s += qr[d] * kr[d];
    s *= scale;
  }
  att[((size_t)bh * T + t) * T + u] = s;
}

/* one work-item per row of (B * NH * T, T): causal softmax in place, and the row's log-sum-exp */
__kernel void nd_att_softmax(__global float *att, __global float *lse, int T) {
  size_t r = get_global_id(0);
  int t = r % T;
  __global float *row = att + r * T;
  float mx = row[0];
  for (int u = 1; u <= t; u++) mx = fmax(mx, row[u]);
  float sum = 0.0f;
  for (int u = 0; u <= t; u++) {
    row[u] = exp(row[u] - mx);
    sum += row[u];
  }
  float inv = 1.0f / sum;
  for (int u = 0; u <= t; u++) row[u] *= inv;
  for (int u = t + 1; u < T; u++) row[u] = 0.0f;
  lse[r] = mx + log(sum);
}

/* one work-item per row: the scores become the probabilities again, exp(score - lse), 0 above the diagonal */
__kernel void nd_att_probs(__global float *att, __global const float *lse, int T) {
  size_t r = get_global_id(0);
  int t = r % T;
  __global float *row = att + r * T;
  for (int u = 0; u < T; u++) row[u] = u <= t ? exp(row[u] - lse[r]) : 0.0f;
}

/* global (B * NH, T, hs): out = att . v */
__kernel void nd_att_out(__global float *out, __global const float *att, __global const float *v, int vo, int kvs,
                         int T, int NH, int NKV, int hs) {
  int bh = get_global_id(0), t = get_global_id(1), d = get_global_id(2);
  int b = bh / NH, h = bh % NH, g = h / (NH / NKV);
  __global const float *a = att + ((size_t)bh * T + t) * T;
  float s = 0.0f;
  for (int u = 0; u <= t; u++) s += a[u] * v[vo + ((size_t)b * T + u) * kvs + g * hs + d];
  out[((size_t)b * T + t) * NH * hs + h * hs + d] = s;
}

/* global (B * NH, T, T): datt = dout . v^T, masked */
__kernel void nd_att_dscores(__global float *datt, __global const float *dout, __global const float *v, int vo,
                             int kvs, int T, int NH, int NKV, int hs) {
  int bh = get_global_id(0), t = get_global_id(1), u = get_global_id(2);
  int b = bh / NH, h = bh % NH, g = h / (NH / NKV);
  float s = 0.0f;
  if (u <= t) {
    __global const float *dy = dout + ((size_t)b * T + t) * NH * hs + h * hs;
    __global const float *vr = v + vo + ((size_t)b * T + u) * kvs + g * hs;
    for (int d = 0; d < hs; d++) s += dy[d] * vr[d];
  }
  datt[((size_t)bh * T + t) * T + u] = s;
}

/* one work-item per row: the softmax backward in place, dscore = att * (datt - D), D = rowsum(dout * out) */
__kernel void nd_att_softmax_bwd(__global float *datt, __global const float *att, __global const float *dout,
                                 __global const float *out, int T, int NH, int hs) {
  size_t r = get_global_id(0);
  int t = r % T, h = r / T % NH, b = r / T / NH;
  __global float *d = datt + r * T;
  __global const float *a = att + r * T;
  size_t o = ((size_t)b * T + t) * NH * hs + (size_t)h * hs;
  float D = 0.0f;
  for (int c = 0; c < hs; c++) D += dout[o + c] * out[o + c];
  for (int u = 0; u <= t; u++) d[u] = a[u] * (d[u] - D);
  for (int u = t + 1; u < T; u++) d[u] = 0.0f;
}

/* global (B * NH, T, hs): dq = scale * dscore . k (overwritten, layout as q) */
__kernel void nd_att_dq(__global float *dq, int qo, int qs, __global const float *ds, __global const float *k, int ko,
                        int kvs, int T, int NH, int NKV, int hs, float scale) {
  int bh = get_global_id(0), t = get_global_id(1), d = get_global_id(2);
  int b = bh / NH, h = bh % NH, g = h / (NH / NKV);
  __global const float *dsr = ds + ((size_t)bh * T + t) * T;
  __global const float *kc = k + ko + (size_t)b * T * kvs + g * hs + d;
  float s = 0.0f;
  for (int u = 0; u <= t; u++) s += dsr[u] * kc[(size_t)u * kvs];
  dq[qo + ((size_t)b * T + t) * qs + h * hs + d] = scale * s;
}

/* global (B * NKV, T, hs): dk = scale * dscore^T . q and dv = att^T . dout,
 * summed over the query heads of the group in head order (overwritten,
 * layouts as k and v) */
__kernel void nd_att_dkv(__global float *dk, int dko, __global float *dv, int dvo, int kvs, __global const float *ds,
                         __global const float *att, __global const float *dout, __global const float *q, int qo,
                         int qs, int T, int NH, int NKV, int hs, float scale) {
  int bg = get_global_id(0), t = get_global_id(1), d = get_global_id(2);
  int b = bg / NKV, g = bg % NKV, group = NH / NKV;
  float sk = 0.0f, sv = 0.0f;
  for (int h = g * group; h < (g + 1) * group; h++) {
    size_t bh = (size_t)b * NH + h;
    __global const float *dsb = ds + bh * T * T, *ab = att + bh * T * T;
    __global const float *qc = q + qo + (size_t)b * T * qs + h * hs + d;
    __global const float *dyc = dout + (size_t)b * T * NH * hs + h * hs + d;
    for (int u = t; u < T; u++) {
      sk += dsb[(size_t)u * T + t] * qc[(size_t)u * qs];
      sv += ab[(size_t)u * T + t] * dyc[(size_t)u * NH * hs];
    }
  }
  size_t r = ((size_t)b * T + t) * kvs + g * hs + d;
  dk[dko + r] = scale * sk;
  dv[dvo + r] = sv;
}

/* global (B * T, C): out = wte_shard[tok - v0] (or 0 outside the shard) [+ wpe[t]] */
__kernel void nd_embed_fwd(__global float *out, __global const int *tokens, __global const float *wte,
                           __global const float *wpe, int has_wpe, int T, int C, int v0, int Vs) {
  int bt = get_global_id(0), c = get_global_id(1);
  int r = tokens[bt] - v0;
  float x = r >= 0 && r < Vs ? wte[(size_t)r * C + c] : 0.0f;
  if (has_wpe) x += wpe[(size_t)(bt % T) * C + c];
  out[(size_t)bt * C + c] = x;
}

/* global (C): the scatter of dout rows into the shard's rows, in (b, t) order per column */
__kernel void nd_embed_bwd_wte(__global float *dwte, __global const float *dout, __global const int *tokens, int BT,
                               int C, int v0, int Vs) {
  int c = get_global_id(0);
  for (int bt = 0; bt < BT; bt++) {
    int r = tokens[bt] - v0;
    if (r >= 0 && r < Vs) dwte[(size_t)r * C + c] += dout[(size_t)bt * C + c];
  }
}

/* global (T, C): dwpe = beta * dwpe + sum over the batch of dout */
__kernel void nd_embed_bwd_wpe(__global float *dwpe, __global const float *dout, int B, int T, float beta) {
  int t = get_global_id(0), c = get_global_id(1), C = get_global_size(1);
  float s = beta == 0.0f ? 0.0f : beta * dwpe[(size_t)t * C + c];
  for (int b = 0; b < B; b++) s += dout[((size_t)b * T + t) * C + c];
  dwpe[(size_t)t * C + c] = s;
}

/* one work-item per row: stats (N, 3) = {max, sum exp(logit - max), target logit or 0} */
__kernel void nd_ce_stats(__global float *stats, __global const float *logits, __global const int *targets, int Vs,
                          int v0) {
  size_t i = get_global_id(0);
  __global const float *row = logits + i * Vs;
  float mx = -INFINITY, sum = 0.0f;
  for (int j = 0; j < Vs; j++) mx = fmax(mx, row[j]);
  for (int j = 0; j < Vs; j++) sum += exp(row[j] - mx);
  int r = targets[i] - v0;
  stats[3 * i] = mx;
  stats[3 * i + 1] = sum;
  stats[3 * i + 2] = r >= 0 && r < Vs ? row[r] : 0.0f;
}

/* one work-item per row, one shard: lse (N) = max + log(sum exp(logit - max)) from stats (N, 3) */
__kernel void nd_ce_lse(__global float *lse, __global const float *stats) {
  size_t i = get_global_id(0);
  float sum = stats[3 * i + 1];
  lse[i] = stats[3 * i] + log(sum > 0.0f ? sum : 0.0f);
}

/* global (N, Vs), in place: dlogits = scale * (softmax - onehot(target)) */
__kernel void nd_ce_bwd(__global float *logits, __global const float *lse, __global const int *targets, int v0,
                        float scale) {
  int i = get_global_id(0), j = get_global_id(1), Vs = get_global_size(1);
  size_t k = (size_t)i * Vs + j;
  float g = scale * exp(logits[k] - lse[i]);
  logits[k] = j == targets[i] - v0 ? g - scale : g;
}

/* AdamW; c1, c2 are the bias corrections 1 / (1 - beta^t) */
__kernel void nd_adamw(__global float *param, __global float *m, __global float *v, __global const float *grad,
                       float lr, float beta1, float beta2, float eps, float wd, float gscale, float c1, float c2) {
  size_t i = get_global_id(0);
  float g = grad[i] * gscale;
  float mi = beta1 * m[i] + (1.0f - beta1) * g;
  float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  param[i] -= lr * (mi * c1 / (sqrt(vi * c2) + eps) + wd * param[i]);
}

/* Llama: RMSNorm, one work-item per row (or per column for the weight gradient) */
__kernel void nd_rms_fwd(__global float *out, __global float *rstd, __global const float *inp,
                         __global const float *w, int C, float eps) {
  size_t i = get_global_id(0);
  __global const float *x = inp + i * C;
  float ss = 0.0f;
  for (int j = 0; j < C; j++) ss += x[j] * x[j];
  float s = 1.0f / sqrt(ss / (float)C + eps);
  for (int j = 0; j < C; j++) out[i * C + j] = w[j] * (x[j] * s);
  rstd[i] = s;
}

__kernel void nd_rms_bwd_in(__global float *dinp, __global const float *dskip, int has_skip,
                            __global const float *dout, __global const float *inp, __global const float *w,
                            __global const float *rstd, int C) {
  size_t i = get_global_id(0);
  __global const float *x = inp + i * C, *dy = dout + i * C;
  float s = rstd[i], dot = 0.0f;
  for (int j = 0; j < C; j++) dot += dy[j] * w[j] * x[j] * s;
  dot /= (float)C;
  for (int j = 0; j < C; j++) {
    float g = s * (dy[j] * w[j] - x[j] * s * dot);
    dinp[i * C + j] = has_skip ? dskip[i * C + j] + g : g;
  }
}

__kernel void nd_rms_bwd_w(__global float *dw, __global const float *dout, __global const float *inp,
                           __global const float *rstd, int N, int C, float beta) {
  int j = get_global_id(0);
  float sw = beta == 0.0f ? 0.0f : beta * dw[j];
  for (int i = 0; i < N; i++) sw += dout[(size_t)i * C + j] * inp[(size_t)i * C + j] * rstd[i];
  dw[j] = sw;
}

/* rotary embedding, rotate_half: global (B*T*H, hs/2); sign -1 is the
 * backward. The frequencies are common/rope.h's nd_rope_inv_freq: theta, and
 * Llama 3's scaling (factor 1: none) of the wavelengths longer than
 * context / high, blended up to context / low. */
__kernel void nd_rope(__global float *out, __global const float *inp, int T, int H, int hs, float theta, float factor,
                      float low, float high, float context, float sign) {
  size_t r = get_global_id(0);
  int i = get_global_id(1), hh = hs / 2, t = (int)(r / H % T);
  float inv_freq = 1.0f / pow(theta, (float)(2 * i) / (float)hs);
  if (factor != 1.0f) {
    float wavelen = 6.283185307179586f / inv_freq;
    if (wavelen > context / low) {
      inv_freq = inv_freq / factor;
    } else if (wavelen >= context / high) {
      float smooth = (context / wavelen - low) / (high - low);
      inv_freq = (1.0f - smooth) * inv_freq / factor + smooth * inv_freq;
    }
  }
  float ang = (float)t * inv_freq, c = cos(ang), s = sign * sin(ang);
  float x0 = inp[r * hs + i], x1 = inp[r * hs + i + hh];
  out[r * hs + i] = x0 * c - x1 * s;
  out[r * hs + i + hh] = x1 * c + x0 * s;
}

/* the gated SiLU: out = silu(gate) * up */
__kernel void nd_swiglu_fwd(__global float *out, __global const float *gate, __global const float *up) {
  size_t i = get_global_id(0);
  float g = gate[i];
  out[i] = g / (1.0f + exp(-g)) * up[i];
}

__kernel void nd_swiglu_bwd(__global float *dgate, __global float *dup, __global const float *gate,
                            __global const float *up, __global const float *dout) {
  size_t i = get_global_id(0);
  float g = gate[i], sig = 1.0f / (1.0f + exp(-g));
  dup[i] = dout[i] * g * sig;
  dgate[i] = dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
}
