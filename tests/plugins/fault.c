/* Kernel plugins that take their process down, one per -D flag, for
 * tests/plugin_faults.sh. Each registers a residual add "fault" (out = a + b,
 * right when it returns) and misbehaves:
 *   FAULT_CTOR        a constructor that stores to an unmapped address (while dlopen loads it)
 *   FAULT_INIT        ndgraph_plugin_init stores to an unmapped address
 *   FAULT_SEGV        the kernel stores to an unmapped address
 *   FAULT_ABORT       the kernel calls abort()
 *   FAULT_HEAP        the kernel frees a block twice (the allocator aborts)
 *   FAULT_SPIN        the kernel never returns
 *   FAULT_EXIT        the kernel calls exit(0)
 *   FAULT_LATE_SEGV   FAULT_SEGV, FAULT_LATE_EXIT FAULT_EXIT, only on more than
 *   FAULT_LATE_EXIT   1000 elements: the start-up probe's sizes (7, 1, 1000) pass,
 *                     a training step's do not
 *   FAULT_COST_NEG    a cost model that says -1 FLOPs
 *   FAULT_COST_MAX    a cost model that says INT64_MAX FLOPs */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <ndgraph/kernel.h>

/* An unmapped page, not NULL: under the sanitizers a store through NULL is
 * reported (and the process ended) by their null check before it faults.
 * volatile: the compiler may neither drop the store nor prove it undefined. */
static int *volatile nowhere = (int *)16;

#if defined(FAULT_CTOR)
__attribute__((constructor)) static void crash_on_load(void) { *nowhere = 1; }
#endif

static void misbehave(int64_t n) {
  (void)n;
#if defined(FAULT_SEGV) || defined(FAULT_LATE_SEGV)
#if defined(FAULT_LATE_SEGV)
  if (n > 1000)
#endif
    *nowhere = 1;
#elif defined(FAULT_ABORT)
  abort();
#elif defined(FAULT_HEAP)
  char *volatile p = malloc(64);
  free(p);
  free(p);
#elif defined(FAULT_SPIN)
  for (;;) pause();
#elif defined(FAULT_EXIT) || defined(FAULT_LATE_EXIT)
#if defined(FAULT_LATE_EXIT)
  if (n > 1000)
#endif
    exit(0);
#endif
}

static int fault_add(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  misbehave(t[0].shape[0]);
  float *out = t[0].data;
  const float *x = t[1].data, *y = t[2].data;
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = x[i] + y[i];
  return 0;
}

static void fault_cost(const nd_tensor_desc *t, int n, const nd_kernel_args *a, int64_t *flops, int64_t *bytes) {
  (void)t, (void)n, (void)a, (void)bytes;
#if defined(FAULT_COST_NEG)
  *flops = -1;
#elif defined(FAULT_COST_MAX)
  *flops = INT64_MAX;
#else
  (void)flops;
#endif
}

int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version);
int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version) {
  if (abi_version != ND_KERNEL_ABI_VERSION) return ND_PLUGIN_EABI;
#if defined(FAULT_INIT)
  *nowhere = 1;
#endif
  nd_kernel_def d = {"residual_fwd", "fault", ND_BACKEND_CPU, fault_add, fault_cost, NULL};
  return reg->add_kernel(reg, &d);
}
