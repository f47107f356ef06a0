/* Training with the example plugin (examples/plugins) reproduces the
 * reference: its SiLU gives the losses of a SiLU this test registers itself
 * through the same registry API, and its blocked GEMM the losses of the
 * built-in GEMM, over 20 steps within 1e-5 relative. */
#include <math.h>

#include "ndgraph/kernel.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define STEPS 20

/* ------------------------------------------------ the test's own SiLU, in double */

static int ref_silu_forward(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = t[0].data;       // (n)
  const float *inp = t[1].data; // (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = (float)(inp[i] / (1.0 + exp(-(double)inp[i])));
  return 0;
}

static int ref_silu_backward(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *dinp = t[0].data;                         // (n)
  const float *inp = t[1].data, *dout = t[2].data; // (n), (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) {
    double s = 1.0 / (1.0 + exp(-(double)inp[i]));
    dinp[i] = (float)(s * (1.0 + inp[i] * (1.0 - s)) * dout[i]);
  }
  return 0;
}

static int ref_init(nd_kernel_registry *reg, int abi_version) {
  if (abi_version != ND_KERNEL_ABI_VERSION) return ND_PLUGIN_EABI;
  nd_activation_def d = {"silu_ref", ref_silu_forward, ref_silu_backward, NULL, NULL, NULL};
  return reg->add_activation(reg, &d);
}

/* ------------------------------------------------------------------ runs */

static char plugins_set[2048];

static int train(const char *const *overrides, double *losses) { return run_losses(overrides, STEPS, losses); }

static double max_rel(const double *a, const double *ref) {
  double m = 0;
  for (int i = 0; i < STEPS; i++) {
    double e = fabs(a[i] - ref[i]) / fabs(ref[i]);
    if (!(e <= m)) m = e; /* NaN wins */
  }
  return m;
}

int main(void) {
  const char *build = getenv("ND_BUILDDIR");
  snprintf(plugins_set, sizeof plugins_set, "kernels.plugins=[%s/examples/plugins/.libs/libexample.so]",
           build ? build : ".");
  ok(nd_kernels_add_static("test:silu_ref", ref_init) == 0, "the test's SiLU registers in-process");

  double ref[STEPS], silu[STEPS], gelu[STEPS], blocked[STEPS];
  const char *const act_ref[] = {"model.activation=silu_ref", "train.steps=20", NULL};
  const char *const act_plugin[] = {plugins_set, "model.activation=silu", "train.steps=20", NULL};
  const char *const builtin[] = {"train.steps=20", NULL};
  const char *const gemm[] = {plugins_set, "train.steps=20",
                              "kernels.override={matmul_fwd: blocked, matmul_bwd_input: blocked, "
                              "matmul_bwd_weight: blocked}",
                              NULL};

  if (ok(train(act_ref, ref) == 0, "trains %d steps with the test's SiLU", STEPS) &&
      ok(train(act_plugin, silu) == 0, "trains %d steps with the plugin's SiLU", STEPS)) {
    double e = max_rel(silu, ref);
    ok(e <= 1e-5, "plugin SiLU: losses within %.2e relative of the test's SiLU (need 1e-5; %.4f -> %.4f)", e, silu[0],
       silu[STEPS - 1]);
  }
  if (ok(train(builtin, gelu) == 0, "trains %d steps with the built-in kernels", STEPS)) {
    ok(max_rel(gelu, silu) > 1e-4, "model.activation changes the losses (gelu %.6f, silu %.6f at step %d)",
       gelu[STEPS - 1], silu[STEPS - 1], STEPS);
    if (ok(train(gemm, blocked) == 0, "trains %d steps with the plugin's blocked GEMM", STEPS)) {
      double e = max_rel(blocked, gelu);
      ok(e <= 1e-5, "blocked GEMM: losses within %.2e relative of the built-in GEMM (need 1e-5)", e);
    }
  }
  nd_kernels_clear_static();
  return done_testing();
}
