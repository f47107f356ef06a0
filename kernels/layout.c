/* How the tensors of a task reach an implementation: its buffers, in access
 * order, turned into descriptors by walking the kind's row (graph/kinds.c),
 * which the graph builder followed too. No allocation: this runs per task. */
#include <string.h>

#include "kernels/backend.h"

/* The row's dtype, or bf16 where the task's tensor is (train.precision bf16). */
static int dtype_of(const nd_task *t, const nd_kind_buffer *b, int bf16) {
  int dt = b->dtype == ND_DT_COLL ? (t->a.coll.dtype == ND_F64 ? ND_DT_F64 : ND_DT_F32) : b->dtype;
  if (bf16 || dt == ND_DT_BF16) return ND_KERNEL_BF16;
  return dt == ND_DT_I32 ? ND_KERNEL_I32 : dt == ND_DT_F64 ? ND_KERNEL_F64 : ND_KERNEL_F32;
}

/* A row-major tensor of buffer b's shape; a weight stored transposed says so in its strides. */
static void desc(nd_tensor_desc *d, const nd_task *t, const nd_kind_buffer *b, void *p, int64_t count, int bf16) {
  d->data = p;
  d->dtype = dtype_of(t, b, bf16);
  d->ndim = b->ndim;
  int64_t stride = 1;
  for (int i = b->ndim - 1; i >= 0; i--) {
    d->shape[i] = b->dims[i] == ND_D_BUF ? count : nd_kind_dim(t, b->dims[i]);
    d->strides[i] = stride;
    stride *= d->shape[i];
  }
  if (b->weight && t->a.mm.trans_w) {
    d->strides[0] = 1;
    d->strides[1] = d->shape[0];
  }
}

int nd__kernel_layout(const nd_task *t, void *const *ptrs, const int64_t *count, const uint8_t *bf16, nd_tensor_desc *d,
                      nd_kernel_args *a, uint8_t *role) {
  const nd_kind_row *row = nd_kind(t->kind);
  *a = (nd_kernel_args){row->name, row->beta ? row->beta(t) : 0.0f, NULL, NULL, 0};
  int n = 0, j = 0;
  for (int i = 0; i < row->n_buffers; i++) {
    const nd_kind_buffer *b = &row->buf[i];
    if (!nd_kind_present(t, b)) {
      memset(&d[n], 0, sizeof d[n]);
      if (role) role[n] = b->role;
      n++;
      continue;
    }
    for (int c = nd_kind_count(t, b, t->n_access - j); c > 0; c--, j++, n++) {
      desc(&d[n], t, b, ptrs ? ptrs[j] : NULL, count ? count[j] : 0, bf16 && bf16[j]);
      if (role) role[n] = b->role;
    }
  }
  return n;
}
