/* AdamW: Adam with decoupled weight decay and bias correction. */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"

#include <math.h>
#include <stddef.h>

ND_VECTOR_CLONES
void nd_adamw(float *param, float *m, float *v, const float *grad, int64_t n, float lr, float beta1, float beta2,
              float eps, float weight_decay, float grad_scale, int t) {
  // param (n), m (n), v (n), grad (n)
  const float c1 = (float)(1.0 / (1.0 - pow(beta1, t))); // bias corrections
  const float c2 = (float)(1.0 / (1.0 - pow(beta2, t)));
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float g = grad[i] * grad_scale;
    float mi = beta1 * m[i] + (1.0f - beta1) * g;
    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float mhat = mi * c1, vhat = vi * c2;
    param[i] -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * param[i]);
  }
}
