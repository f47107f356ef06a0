/* How the tensors of a task reach its kernel: the IR's buffers, in access
 * order, turned into descriptors in the order kernel.h documents. */
#include <string.h>

#include "kernels/registry.h"

/* A contiguous row-major f32 tensor; p NULL with present 0: absent. */
static void desc(nd_tensor_desc *d, void *p, int present, int ndim, const int64_t *shape) {
  memset(d, 0, sizeof *d);
  if (!present) return;
  d->data = p;
  d->dtype = ND_KERNEL_F32;
  d->ndim = ndim;
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    d->shape[i] = shape[i];
    d->strides[i] = stride;
    stride *= shape[i];
  }
}

#define D(i, p, present, ...)                                                  \
  do {                                                                         \
    const int64_t shape_[] = {__VA_ARGS__};                                    \
    desc(&d[i], p, present, (int)(sizeof shape_ / sizeof shape_[0]), shape_); \
  } while (0)

/* A linear layer's weight: (K, N), stored (N, K) when trans_w. */
static void weight(nd_tensor_desc *d, void *p, const struct nd_mm_args *m) {
  D(0, p, 1, m->K, m->N);
  if (m->trans_w) {
    d->strides[0] = 1;
    d->strides[1] = m->K;
  }
}

int nd__kernel_replaceable(enum nd_task_kind kind) {
  switch (kind) {
  case ND_TASK_MATMUL_FWD:
  case ND_TASK_MATMUL_BWD_IN:
  case ND_TASK_MATMUL_BWD_W:
  case ND_TASK_LN_FWD:
  case ND_TASK_LN_BWD_IN:
  case ND_TASK_LN_BWD_W:
  case ND_TASK_ATTN_FWD:
  case ND_TASK_ATTN_BWD:
  case ND_TASK_RESIDUAL_FWD:
  case ND_TASK_ACT_FWD:
  case ND_TASK_ACT_BWD:
    return 1;
  default:
    return 0;
  }
}

int nd__kernel_layout(const nd_task *t, void *const *ptrs, nd_tensor_desc *d, nd_kernel_args *a, uint8_t *role) {
  uint8_t r[ND__KERNEL_MAX_TENSORS] = {ND__IN};
#define P(i) (ptrs ? ptrs[i] : NULL)
  const struct nd_mm_args *m = &t->a.mm;
  const struct nd_ln_args *l = &t->a.ln;
  const struct nd_attn_args *at = &t->a.attn;
  int64_t n = t->a.ew.n, hb = m->has_bias;
  int count = 0;
  *a = (nd_kernel_args){nd_task_kind_name(t->kind), 0.0f, NULL};
  switch (t->kind) {
  case ND_TASK_MATMUL_FWD: /* buffers: out, inp, weight, [bias] */
    D(0, P(0), 1, m->M, m->N);
    D(1, P(1), 1, m->M, m->K);
    weight(&d[2], P(2), m);
    D(3, hb ? P(3) : NULL, hb, m->N);
    r[0] = ND__OUT;
    count = 4;
    break;
  case ND_TASK_MATMUL_BWD_IN: /* buffers: dinp, dout, weight */
    D(0, P(0), 1, m->M, m->K);
    D(1, P(1), 1, m->M, m->N);
    weight(&d[2], P(2), m);
    r[0] = ND__OUT;
    count = 3;
    break;
  case ND_TASK_MATMUL_BWD_W: /* buffers: dweight, [dbias], dout, inp */
    weight(&d[0], P(0), m);
    D(1, hb ? P(1) : NULL, hb, m->N);
    D(2, P(1 + hb), 1, m->M, m->N);
    D(3, P(2 + hb), 1, m->M, m->K);
    a->beta = m->beta;
    r[0] = r[1] = ND__OUT;
    count = 4;
    break;
  case ND_TASK_LN_FWD: /* buffers: out, mean, rstd, inp, weight, bias */
    D(0, P(0), 1, l->N, l->C);
    D(1, P(1), 1, l->N);
    D(2, P(2), 1, l->N);
    D(3, P(3), 1, l->N, l->C);
    D(4, P(4), 1, l->C);
    D(5, P(5), 1, l->C);
    r[0] = r[1] = r[2] = ND__OUT;
    count = 6;
    break;
  case ND_TASK_LN_BWD_IN: /* buffers: dinp, dout, inp, weight, mean, rstd, [dskip] */
    D(0, P(0), 1, l->N, l->C);
    D(1, l->has_skip ? P(6) : NULL, l->has_skip, l->N, l->C);
    D(2, P(1), 1, l->N, l->C);
    D(3, P(2), 1, l->N, l->C);
    D(4, P(3), 1, l->C);
    D(5, P(4), 1, l->N);
    D(6, P(5), 1, l->N);
    r[0] = ND__OUT;
    count = 7;
    break;
  case ND_TASK_LN_BWD_W: /* buffers: dweight, dbias, dout, inp, mean, rstd */
    D(0, P(0), 1, l->C);
    D(1, P(1), 1, l->C);
    D(2, P(2), 1, l->N, l->C);
    D(3, P(3), 1, l->N, l->C);
    D(4, P(4), 1, l->N);
    D(5, P(5), 1, l->N);
    a->beta = l->beta;
    r[0] = r[1] = ND__OUT;
    count = 6;
    break;
  case ND_TASK_ATTN_FWD: /* buffers: out, att, qkv */
    D(0, P(0), 1, at->B, at->T, at->NH, at->hs);
    D(1, P(1), 1, at->B, at->NH, at->T, at->T);
    D(2, P(2), 1, at->B, at->T, 3, at->NH, at->hs);
    r[0] = r[1] = ND__OUT;
    count = 3;
    break;
  case ND_TASK_ATTN_BWD: /* buffers: dqkv, datt, dout, qkv, att */
    D(0, P(0), 1, at->B, at->T, 3, at->NH, at->hs);
    D(1, P(1), 1, at->B, at->NH, at->T, at->T);
    D(2, P(2), 1, at->B, at->T, at->NH, at->hs);
    D(3, P(3), 1, at->B, at->T, 3, at->NH, at->hs);
    D(4, P(4), 1, at->B, at->NH, at->T, at->T);
    r[0] = ND__OUT;
    r[1] = ND__SCRATCH;
    count = 5;
    break;
  case ND_TASK_RESIDUAL_FWD: /* buffers: out, a, b */
  case ND_TASK_ACT_BWD:      /* buffers: dinp, inp, dout */
    D(0, P(0), 1, n);
    D(1, P(1), 1, n);
    D(2, P(2), 1, n);
    r[0] = ND__OUT;
    count = 3;
    break;
  case ND_TASK_ACT_FWD: /* buffers: out, inp */
    D(0, P(0), 1, n);
    D(1, P(1), 1, n);
    r[0] = ND__OUT;
    count = 2;
    break;
  default:
    return 0;
  }
#undef P
  if (role) memcpy(role, r, (size_t)count);
  return count;
}
