/* Broken kernel plugins, one per -D flag, for tests/plugin.sh:
 *   BAD_ABI       built with another ND_KERNEL_ABI_VERSION
 *   BAD_KIND      registers a kernel for a task kind that does not exist
 *   BAD_DUP       registers the same kernel name twice
 *   BAD_FAIL      a matmul_fwd kernel "failing" that returns an error
 *   BAD_BACKWARD  a SiLU whose backward is wrong (kernel-check must fail it)
 *   BAD_SLOPPY    a residual add "sloppy" off by 0.1% (kernel-check's fp64 reference must fail it)
 *   OLD_ATTENTION an attention_fwd kernel built against ABI 2, whose attention kept (T, T) probabilities
 *   NO_ENTRY      a shared object without the entry point
 *   DATA_ENTRY    the entry point's name on an array, not a function */
#include <math.h>

#include <ndgraph/kernel.h>

static int zero_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)t, (void)n, (void)a;
  return 0;
}

static int failing(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)t, (void)n, (void)a;
  return -7;
}

static int silu_forward(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = t[0].data;
  const float *inp = t[1].data;
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = inp[i] / (1.0f + expf(-inp[i]));
  return 0;
}

/* sigmoid(x) * dout: forgets the x * sigmoid'(x) term */
static int silu_backward_wrong(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *dinp = t[0].data;
  const float *inp = t[1].data, *dout = t[2].data;
  for (int64_t i = 0; i < t[0].shape[0]; i++) dinp[i] = dout[i] / (1.0f + expf(-inp[i]));
  return 0;
}

/* out = (a + b) (1 + 1e-3): the error of a kernel in reduced precision */
static int sloppy_add(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = t[0].data;
  const float *x = t[1].data, *y = t[2].data;
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = (x[i] + y[i]) * 1.001f;
  return 0;
}

#if defined(DATA_ENTRY)
/* the entry point's name on a data symbol: calling it would crash */
int ndgraph_plugin_init[4] = {0};
int not_the_entry_point(void);
int not_the_entry_point(void) {
  return zero_fwd(0, 0, 0) + failing(0, 0, 0) + silu_forward(0, 0, 0) + silu_backward_wrong(0, 0, 0) +
         sloppy_add(0, 0, 0);
}
#elif defined(NO_ENTRY)
int not_the_entry_point(void);
int not_the_entry_point(void) {
  return zero_fwd(0, 0, 0) + failing(0, 0, 0) + silu_forward(0, 0, 0) + silu_backward_wrong(0, 0, 0) +
         sloppy_add(0, 0, 0);
}
#else
int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version);
int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version) {
  if (abi_version != ND_KERNEL_ABI_VERSION) return ND_PLUGIN_EABI;
  (void)zero_fwd, (void)failing, (void)silu_forward, (void)silu_backward_wrong, (void)sloppy_add;
#if defined(BAD_KIND)
  nd_kernel_def d = {"matmul_fw", "fast", ND_BACKEND_CPU, zero_fwd, NULL, NULL};
  return reg->add_kernel(reg, &d);
#elif defined(BAD_DUP)
  nd_kernel_def d = {"matmul_fwd", "fast", ND_BACKEND_CPU, zero_fwd, NULL, NULL};
  if (reg->add_kernel(reg, &d)) return -1;
  return reg->add_kernel(reg, &d);
#elif defined(BAD_FAIL)
  nd_kernel_def d = {"matmul_fwd", "failing", ND_BACKEND_CPU, failing, NULL, NULL};
  return reg->add_kernel(reg, &d);
#elif defined(BAD_SLOPPY)
  nd_kernel_def d = {"residual_fwd", "sloppy", ND_BACKEND_CPU, sloppy_add, NULL, NULL};
  return reg->add_kernel(reg, &d);
#elif defined(OLD_ATTENTION)
  nd_kernel_def d = {"attention_fwd", "old", ND_BACKEND_CPU, zero_fwd, NULL, NULL};
  return reg->add_kernel(reg, &d);
#elif defined(BAD_BACKWARD)
  nd_activation_def d = {"silu", silu_forward, silu_backward_wrong, NULL, NULL, NULL};
  return reg->add_activation(reg, &d);
#else
  (void)reg;
  return 0;
#endif
}
#endif
