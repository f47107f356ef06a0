/* The built-in CPU kernels (kernels/cpu) behind the descriptor interface of
 * plugins, so that both are called the same way. */
#include "kernels/cpu/kernels.h"
#include "kernels/registry.h"

#define F(i) ((float *)t[i].data)

/* Whether the weight descriptor is a stored (N, K): the kernels' trans_w. */
static int transposed(const nd_tensor_desc *w) { return w->strides[1] != 1; }

static int matmul_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (M, N), inp (M, K), weight (K, N), bias (N) or absent
  nd_matmul_forward(F(0), F(1), F(2), F(3), (int)t[1].shape[0], (int)t[1].shape[1], (int)t[0].shape[1],
                    transposed(&t[2]));
  return 0;
}

static int matmul_bwd_input(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  // dinp (M, K), dout (M, N), weight (K, N)
  nd_matmul_backward_input(F(0), F(1), F(2), (int)t[0].shape[0], (int)t[0].shape[1], (int)t[1].shape[1],
                           transposed(&t[2]), a->beta);
  return 0;
}

static int matmul_bwd_weight(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  // dweight (K, N), dbias (N) or absent, dout (M, N), inp (M, K)
  nd_matmul_backward_weight(F(0), F(1), F(2), F(3), (int)t[3].shape[0], (int)t[3].shape[1], (int)t[2].shape[1],
                            transposed(&t[0]), a->beta);
  return 0;
}

static int layernorm_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C)
  nd_layernorm_forward(F(0), F(1), F(2), F(3), F(4), F(5), (int)t[0].shape[0], (int)t[0].shape[1]);
  return 0;
}

static int layernorm_bwd_input(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // dinp (N, C), dskip (N, C) or absent, dout, inp (N, C), weight (C), mean (N), rstd (N)
  nd_layernorm_backward_input(F(0), F(1), F(2), F(3), F(4), F(5), F(6), (int)t[0].shape[0], (int)t[0].shape[1]);
  return 0;
}

static int layernorm_bwd_weight(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  // dweight (C), dbias (C), dout (N, C), inp (N, C), mean (N), rstd (N)
  nd_layernorm_backward_weight(F(0), F(1), F(2), F(3), F(4), F(5), (int)t[2].shape[0], (int)t[2].shape[1],
                               a->beta);
  return 0;
}

static int attention_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (B, T, NH, hs), att (B, NH, T, T), qkv (B, T, 3, NH, hs)
  const int64_t *s = t[0].shape;
  nd_attention_forward(F(0), F(1), F(2), (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
  return 0;
}

static int attention_bwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // dqkv (B, T, 3, NH, hs), datt (B, NH, T, T), dout (B, T, NH, hs), qkv, att
  const int64_t *s = t[2].shape;
  nd_attention_backward(F(0), F(1), F(2), F(3), F(4), (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
  return 0;
}

static int residual_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (n), a (n), b (n)
  nd_residual_forward(F(0), F(1), F(2), t[0].shape[0]);
  return 0;
}

static int gelu_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (n), inp (n)
  nd_gelu_forward(F(0), F(1), t[0].shape[0]);
  return 0;
}

static int gelu_bwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // dinp (n), inp (n), dout (n)
  nd_gelu_backward(F(0), F(1), F(2), t[0].shape[0]);
  return 0;
}

#define ND__BUILTINS(X)                                                                       \
  X(MATMUL_FWD, matmul_fwd, "builtin") X(MATMUL_BWD_IN, matmul_bwd_input, "builtin")             \
  X(MATMUL_BWD_W, matmul_bwd_weight, "builtin") X(LN_FWD, layernorm_fwd, "builtin")              \
  X(LN_BWD_IN, layernorm_bwd_input, "builtin") X(LN_BWD_W, layernorm_bwd_weight, "builtin")      \
  X(ATTN_FWD, attention_fwd, "builtin") X(ATTN_BWD, attention_bwd, "builtin")                    \
  X(RESIDUAL_FWD, residual_fwd, "builtin") X(ACT_FWD, gelu_fwd, "gelu") X(ACT_BWD, gelu_bwd, "gelu")

#define ND__FN(kind, fn, name) [ND_TASK_##kind] = fn,
const nd_kernel_fn nd__builtin_kernels[ND_TASK_KIND_COUNT] = {ND__BUILTINS(ND__FN)};
/* The table starts with the built-ins, so a program that never loads
 * plugins (or a test) runs them with no set-up. */
#define ND__SLOT(kind, fn, name) [ND_TASK_##kind] = {fn, NULL, NULL, name, "builtin"},
nd__kernel_slot nd__kernels[ND_TASK_KIND_COUNT] = {ND__BUILTINS(ND__SLOT)};
