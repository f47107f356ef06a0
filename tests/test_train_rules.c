/* The training rules README states, each checked directly on a real run:
 * - AdamW decays matrices and embeddings only: one step with weight decay
 *   0.5 and one with 0 from the same start differ by exactly lr * 0.5 * p
 *   on those tensors, and not in a single bit on biases and LayerNorms;
 * - AdamW takes train.adam_beta1, adam_beta2 and adam_epsilon: two steps with
 *   values away from the defaults move a matrix by the closed form computed
 *   here from the two steps' gradients, which each default would miss;
 * - the logged learning rate of every step is the closed form (linear
 *   warm-up, cosine to a tenth of lr at train.steps);
 * - step s trains on sequences s*G .. s*G + G - 1 of the file (sequence j:
 *   the seq_len + 1 tokens from j * seq_len): its loss is the evaluation
 *   loss, at the same parameters, of a file holding exactly those tokens. */
#include <math.h>
#include <unistd.h>

#include "tests/ref/gpt.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define LR     1e-2
#define WARMUP 3
#define STEPS  12
#define G      8
#define T      16

/* AdamW's keys away from their defaults (0.9, 0.95, 1e-8), each far enough
 * that the closed form with the default instead is off by more than 10x the
 * tolerance; epsilon near the gradients' size, so that it matters */
#define BETA1       0.5
#define BETA2       0.6
#define EPS         1e-3
#define ADAM_TENSOR "h.0.mlp.c_fc.weight"

/* A matrix or an embedding, by its Hugging Face name: weights but LayerNorms' */
static int decayed(const char *name) {
  size_t n = strlen(name);
  return n > 7 && strcmp(name + n - 7, ".weight") == 0 && !strstr(name, "ln_");
}

/* Parameters of every tensor after `steps` steps with weight decay wd; and, if p0, before. */
static int params_after(double wd, int steps, float ***out, float ***p0, int *n_out) {
  char kv[64];
  snprintf(kv, sizeof kv, "train.weight_decay=%g", wd);
  const char *ov[] = {kv, "train.grad_clip=0", NULL};
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  int n = 0, rc = -1;
  long long numel;
  if (!cfg || nd_trainer_open(&tr, cfg, &err)) goto done;
  while (nd_trainer_tensor_name(tr, n, NULL)) n++;
  *out = calloc((size_t)n, sizeof **out);
  if (p0) *p0 = calloc((size_t)n, sizeof **p0);
  for (int i = 0; p0 && i < n; i++) {
    const char *name = nd_trainer_tensor_name(tr, i, &numel);
    (*p0)[i] = malloc((size_t)numel * sizeof(float));
    if (nd_trainer_gather(tr, name, ND_GATHER_PARAM, (*p0)[i], numel)) goto done;
  }
  double losses[STEPS];
  if (train_losses(tr, steps, losses)) goto done;
  for (int i = 0; i < n; i++) {
    const char *name = nd_trainer_tensor_name(tr, i, &numel);
    (*out)[i] = malloc((size_t)numel * sizeof(float));
    if (nd_trainer_gather(tr, name, ND_GATHER_PARAM, (*out)[i], numel)) goto done;
  }
  *n_out = n;
  rc = 0;
done:
  if (rc) fprintf(stderr, "# %s\n", err.msg);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

static void decay_mask(void) {
  float **with = NULL, **without = NULL, **p0 = NULL;
  int n = 0, m = 0;
  if (!ok(params_after(0.5, 1, &with, &p0, &n) == 0 && params_after(0.0, 1, &without, NULL, &m) == 0 && n == m,
          "one step with weight decay 0.5 and one with 0"))
    return;
  /* the names: a trainer only for them */
  nd_config *cfg = tiny_config(NULL);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  if (!cfg || nd_trainer_open(&tr, cfg, &err)) return;
  double lr1 = (float)(LR / 2); /* step 1 of a 2-step warm-up (the harness's) */
  for (int i = 0; i < n; i++) {
    long long numel;
    const char *name = nd_trainer_tensor_name(tr, i, &numel);
    if (decayed(name)) {
      double num = 0, den = 0;
      for (long long k = 0; k < numel; k++) {
        double want = -lr1 * 0.5 * p0[i][k], got = (double)with[i][k] - without[i][k];
        num += (got - want) * (got - want);
        den += want * want;
      }
      ok(sqrt(num / den) < 1e-3, "%s is decayed by lr * wd * p (%.2e relative)", name, sqrt(num / den));
    } else {
      ok(memcmp(with[i], without[i], (size_t)numel * sizeof(float)) == 0, "%s is not decayed", name);
    }
  }
  for (int i = 0; i < n; i++) free(with[i]), free(without[i]), free(p0[i]);
  free(with), free(without), free(p0);
  nd_trainer_close(tr);
  nd_config_free(cfg);
}

/* One tensor through two steps: parameters before and after each, each step's
 * gradient and learning rate. */
struct adam_run {
  long long n;
  float *p[3], *g[2];
  double lr[2];
};

/* The larger relative error of the two steps' updates against AdamW's closed
 * form without decay or clipping: m and v from 0, then step t moves p by
 * -lr * m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps). */
static double adam_error(const struct adam_run *r, double b1, double b2, double eps) {
  double worst = 0;
  for (int t = 1; t <= 2; t++) {
    double num = 0, den = 0;
    for (long long k = 0; k < r->n; k++) {
      double m = 0, v = 0;
      for (int s = 0; s < t; s++) {
        double g = r->g[s][k];
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
      }
      double want = -r->lr[t - 1] * m / (1 - pow(b1, t)) / (sqrt(v / (1 - pow(b2, t))) + eps);
      double got = (double)r->p[t][k] - r->p[t - 1][k];
      num += (got - want) * (got - want);
      den += want * want;
    }
    worst = fmax(worst, sqrt(num / den));
  }
  return worst;
}

static void adam_keys(void) {
  char kv[3][48];
  snprintf(kv[0], sizeof kv[0], "train.adam_beta1=%g", BETA1);
  snprintf(kv[1], sizeof kv[1], "train.adam_beta2=%g", BETA2);
  snprintf(kv[2], sizeof kv[2], "train.adam_epsilon=%g", EPS);
  const char *ov[] = {kv[0], kv[1], kv[2], "train.weight_decay=0", "train.grad_clip=0", NULL};
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  struct adam_run r = {0};
  const char *name = NULL;
  int ran = 0;
  if (cfg && nd_trainer_open(&tr, cfg, &err) == 0) {
    for (int i = 0; (name = nd_trainer_tensor_name(tr, i, &r.n)) && strcmp(name, ADAM_TENSOR) != 0; i++) continue;
    for (int i = 0; name && i < 3; i++) r.p[i] = malloc((size_t)r.n * sizeof(float));
    for (int i = 0; name && i < 2; i++) r.g[i] = malloc((size_t)r.n * sizeof(float));
    ran = name && !nd_trainer_gather(tr, ADAM_TENSOR, ND_GATHER_PARAM, r.p[0], r.n);
    for (int s = 0; ran && s < 2; s++) {
      nd_step_result res = {0};
      ran = !nd_trainer_step(tr, &res, &err) && !nd_trainer_gather(tr, ADAM_TENSOR, ND_GATHER_GRAD, r.g[s], r.n) &&
            !nd_trainer_gather(tr, ADAM_TENSOR, ND_GATHER_PARAM, r.p[s + 1], r.n);
      r.lr[s] = res.lr;
    }
  }
  if (ok(ran, "two steps with adam_beta1 %g, adam_beta2 %g, adam_epsilon %g", BETA1, BETA2, EPS)) {
    double e = adam_error(&r, BETA1, BETA2, EPS);
    ok(e < 1e-3, "%s moves as AdamW with the configured betas and epsilon (%.1e relative)", ADAM_TENSOR, e);
    double e1 = adam_error(&r, 0.9, BETA2, EPS), e2 = adam_error(&r, BETA1, 0.95, EPS);
    double e3 = adam_error(&r, BETA1, BETA2, 1e-8);
    ok(fmin(e1, fmin(e2, e3)) > 1e-2,
       "a key ignored would show: the default beta1 is %.1e off, beta2 %.1e, epsilon %.1e", e1, e2, e3);
  } else {
    diag("%s", err.msg);
  }
  for (int i = 0; i < 3; i++) free(r.p[i]);
  for (int i = 0; i < 2; i++) free(r.g[i]);
  nd_trainer_close(tr);
  nd_config_free(cfg);
}

static void schedule(void) {
  char steps[32], warm[32];
  snprintf(steps, sizeof steps, "train.steps=%d", STEPS);
  snprintf(warm, sizeof warm, "train.warmup_steps=%d", WARMUP);
  const char *ov[] = {steps, warm, NULL};
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  double worst = 0;
  int floor_ok = 1, n = 0;
  if (cfg && nd_trainer_open(&tr, cfg, &err) == 0)
    for (; n < STEPS; n++) {
      nd_step_result r;
      if (nd_trainer_step(tr, &r, &err)) break;
      double want = nd_ref_gpt_lr(LR, WARMUP, STEPS, r.step);
      worst = fmax(worst, fabs(r.lr - want) / want);
      floor_ok &= r.lr >= LR / 10 * (1 - 1e-6);
    }
  ok(n == STEPS && worst < 1e-6, "%d logged learning rates equal the closed form (%.1e relative)", n, worst);
  ok(floor_ok, "the learning rate never goes below lr / 10");
  nd_trainer_close(tr);
  nd_config_free(cfg);
}

static void data_order(void) {
  static const char *const words[] = {"one ", "two ", "three ", "four. ", "five, ", "six ", "seven "};
  char train[64], step_file[64], kv[2][96];
  snprintf(train, sizeof train, "/tmp/nd-rules-%d.txt", (int)getpid());
  snprintf(step_file, sizeof step_file, "/tmp/nd-rules-%d-step.txt", (int)getpid());
  static char text[1 << 14];
  size_t len = 0;
  for (unsigned r = 1; len < 5000; r = r * 1103515245u + 12345u)
    len += (size_t)sprintf(text + len, "%s", words[(r >> 16) % 7]);
  FILE *f = fopen(train, "w");
  if (!f || fwrite(text, 1, len, f) != len || fclose(f)) return;
  snprintf(kv[0], sizeof kv[0], "data.train=%s", train);
  snprintf(kv[1], sizeof kv[1], "data.val=%s", train);
  const char *ov[] = {"data.format=text",
                      kv[0],
                      kv[1],
                      "parallelism.data_parallel_size=1",
                      "parallelism.pipeline_parallel_size=1",
                      "parallelism.micro_batches=1",
                      "parallelism.activation_slots=1",
                      "train.micro_batch_size=8",
                      NULL};
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  double worst = 0;
  int s = 0;
  if (cfg && nd_trainer_open(&tr, cfg, &err) == 0)
    for (; s < 6; s++) {
      /* sequences s*G .. s*G + G - 1: tokens [s*G*T, (s+1)*G*T] */
      f = fopen(step_file, "w");
      if (!f || fwrite(text + (size_t)s * G * T, 1, G * T + 1, f) != G * T + 1 || fclose(f)) break;
      double want, got;
      long long tokens;
      nd_step_result r;
      if (nd_trainer_eval(tr, step_file, 1, &want, &tokens, &err) || nd_trainer_step(tr, &r, &err)) break;
      got = r.loss;
      worst = fmax(worst, fabs(got - want) / want);
    }
  if (s < 6) diag("%s", err.msg);
  ok(s == 6 && worst < 1e-5, "steps 1..6 train on the documented sequences (loss vs evaluation: %.1e relative)", worst);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  unlink(train);
  unlink(step_file);
}

int main(void) {
  decay_mask();
  adam_keys();
  schedule();
  data_order();
  return done_testing();
}
