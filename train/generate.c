/* Generation (docs/generate.md): the graphs of nd_graph_build_generate on an
 * executor of their own, which owns the key/value caches. The owner is the
 * graph of seq_len tokens; the prompt's graph and the one-token graph run
 * on the start of its buffers (nd_exec_add_graph), so the decoding steps
 * resubmit one small graph with the position as the submission's value, and
 * the time of a step grows only with the attention over the cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "graph/ir.h"
#include "graph/shard.h"
#include "tasks/exec.h"
#include "tasks/schedule.h"
#include "train/sample.h"
#include "train/trainer_internal.h"

struct nd_generator {
  const nd_config *cfg;
  nd_graph *owner, *decode, *prefill;
  int decode_which, prefill_which, prefill_tokens;
  nd_exec *ex;
  int32_t *logits; /* [tp]: each tensor rank's logits in the owner */
  float *row;      /* [V]: the logits of the last token, every shard */
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void drop_exec(nd_generator *gen) {
  nd_exec_free(gen->ex);
  nd_graph_free(gen->owner);
  nd_graph_free(gen->decode);
  nd_graph_free(gen->prefill);
  gen->ex = NULL, gen->owner = gen->decode = gen->prefill = NULL;
}

void nd_generator_close(nd_generator *gen) {
  if (!gen) return;
  drop_exec(gen);
  free(gen->logits);
  free(gen->row);
  free(gen);
}

/* Adds g to the executor with its hints; its index in *which. */
static int add(nd_generator *gen, nd_graph *g, int *which, nd_error *err) {
  int rc = nd_exec_add_graph(gen->ex, g, err);
  if (rc < 0) return rc;
  *which = rc;
  return nd_sched_apply(gen->ex, rc, g, gen->cfg, NULL, err);
}

/* The executor for a prompt of n tokens: the owner, the one-token graph and
 * the prompt's (the owner itself for seq_len tokens). */
static int open_exec(nd_generator *gen, nd_kernels *kernels, int n, nd_error *err) {
  int rc;
  drop_exec(gen);
  int S = (int)gen->cfg->model.seq_len;
  if ((rc = nd_graph_build_generate(&gen->owner, gen->cfg, S, err)) ||
      (rc = nd_graph_build_generate(&gen->decode, gen->cfg, 1, err)) ||
      (n < S && (rc = nd_graph_build_generate(&gen->prefill, gen->cfg, n, err))))
    return rc;
  if ((rc = nd_exec_create(&gen->ex, gen->owner, err))) return rc;
  nd_exec_set_kernels(gen->ex, kernels);
  if ((rc = nd_sched_apply(gen->ex, 0, gen->owner, gen->cfg, NULL, err)) ||
      (rc = add(gen, gen->decode, &gen->decode_which, err)))
    return rc;
  gen->prefill_which = 0;
  if (gen->prefill && (rc = add(gen, gen->prefill, &gen->prefill_which, err))) return rc;
  gen->prefill_tokens = n;
  const nd_graph *g = gen->owner;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const char *name = g->tensors[i].name;
    size_t len = strlen(name);
    if (len > 7 && strcmp(name + len - 7, ".logits") == 0) gen->logits[g->tensors[i].home.tp] = i;
  }
  return 0;
}

int nd_generator_open(nd_generator **out, nd_trainer *tr, nd_error *err) {
  const nd_config *cfg = nd__trainer_config(tr);
  int me;
  if (nd_exec_procs(nd__trainer_exec(tr), &me) > 1)
    return nd__fail(err, ND_ENOTIMPL, "generation: runs in one process, not under mpirun");
  nd_generator *gen = calloc(1, sizeof *gen);
  if (!gen) return nd__fail(err, ND_ENOMEM, "generation: out of memory");
  gen->cfg = cfg;
  gen->logits = calloc((size_t)cfg->parallelism.tensor_parallel_size, sizeof *gen->logits);
  gen->row = malloc((size_t)cfg->model.vocab_size * sizeof *gen->row);
  if (!gen->logits || !gen->row) {
    nd_generator_close(gen);
    return nd__fail(err, ND_ENOMEM, "generation: out of memory");
  }
  *out = gen;
  return 0;
}

/* Tensor i of the generation graph from the trainer's whole tensor of that name. */
static int copy_gathered(nd_generator *gen, nd_trainer *tr, int32_t i, nd_error *err) {
  const nd_tensor *t = &gen->owner->tensors[i];
  long long n = nd_shard_full_numel(t);
  float *full = malloc((size_t)n * sizeof *full);
  if (!full) return nd__fail(err, ND_ENOMEM, "generation: out of memory");
  int rc = nd_trainer_gather(tr, t->hf_name, ND_GATHER_PARAM, full, n);
  if (!rc) {
    rc = nd_shard_copy(gen->owner, i, full, nd_exec_acquire(gen->ex, i, 1), 0);
    nd_exec_release(gen->ex, i);
  }
  free(full);
  return rc ? nd__fail(err, rc, "generation: cannot gather the trainer's parameter %s", t->hf_name) : 0;
}

/* The trainer's parameters into the generation graph's: the same tensor
 * shards (same tensor split), from data-parallel replica 0, whichever
 * pipeline stage holds them. */
static int copy_params(nd_generator *gen, nd_trainer *tr, nd_error *err) {
  const nd_graph *g = gen->owner, *src = nd__trainer_graph(tr);
  int rc;
  nd_exec *from = nd__trainer_exec(tr);
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    if (t->kind != ND_TENSOR_PARAM) continue;
    int32_t j = 0;
    for (; j < src->n_tensors; j++) {
      const nd_tensor *s = &src->tensors[j];
      if (s->kind == ND_TENSOR_PARAM && s->home.dp == 0 && s->home.tp == t->home.tp &&
          strcmp(s->hf_name, t->hf_name) == 0)
        break;
    }
    if (j < src->n_tensors && src->tensors[j].dp_numel) {
      /* a range (data_parallel_shard parameters): the whole tensor from its shard group */
      if ((rc = copy_gathered(gen, tr, i, err))) return rc;
      continue;
    }
    if (j == src->n_tensors || src->tensors[j].bytes != t->bytes)
      return nd__fail(err, ND_EINVAL, "generation: the trainer has no parameter %s of %lld bytes", t->name,
                      (long long)t->bytes);
    const void *p = nd_exec_acquire(from, j, 0);
    void *q = nd_exec_acquire(gen->ex, i, 1);
    memcpy(q, p, (size_t)t->bytes);
    nd_exec_release(gen->ex, i);
    nd_exec_release(from, j);
  }
  return 0;
}

/* Submits graph `which` on ids at position pos; the logits of its last token into gen->row. */
static int forward(nd_generator *gen, int which, const int32_t *ids, int n, int pos, nd_error *err) {
  nd_step s = {.seq_limit = INT64_MAX, .loss_scale = 1.0f, .tokens = ids, .pos = pos};
  int rc = nd_exec_run(gen->ex, which, &s, err);
  if (rc) return rc;
  const nd_graph *g = gen->owner;
  for (int t = 0; t < g->tp; t++) {
    int v0 = (int)((int64_t)g->V * t / g->tp), vs = (int)((int64_t)g->V * (t + 1) / g->tp) - v0;
    const float *p = nd_exec_acquire(gen->ex, gen->logits[t], 0);
    memcpy(gen->row + v0, p + (size_t)(n - 1) * vs, (size_t)vs * sizeof *p);
    nd_exec_release(gen->ex, gen->logits[t]);
  }
  for (int v = 0; v < g->V; v++)
    if (!isfinite(gen->row[v]))
      return nd__fail(err, ND_ENUMERIC, "generation: a logit at position %d is not finite", pos + n - 1);
  return 0;
}

static int check(const nd_config *cfg, const nd_generate_opts *o, nd_error *err) {
  long long S = cfg->model.seq_len, V = cfg->model.vocab_size;
  if (o->n_prompt < 1) return nd__fail(err, ND_EINVAL, "generation: the prompt is empty");
  if (o->tokens < 1) return nd__fail(err, ND_EINVAL, "generation: %d tokens to generate: at least 1", o->tokens);
  if ((long long)o->n_prompt + o->tokens > S)
    return nd__fail(err, ND_EINVAL, "generation: %d prompt tokens + %d new ones exceed the %lld positions of model.seq_len",
                    o->n_prompt, o->tokens, S);
  if (!(o->temperature >= 0.0 && o->temperature <= 1e6))
    return nd__fail(err, ND_EINVAL, "generation: temperature %g: from 0 (greedy) to 1e6", o->temperature);
  if (o->top_k < 0) return nd__fail(err, ND_EINVAL, "generation: top-k %d: 0 (off) or more", o->top_k);
  for (int i = 0; i < o->n_prompt; i++)
    if (o->prompt[i] < 0 || o->prompt[i] >= V)
      return nd__fail(err, ND_EINVAL, "generation: prompt id %d (at %d) is outside the vocabulary of %lld", o->prompt[i],
                      i, V);
  return 0;
}

int nd_generate(nd_generator *gen, nd_trainer *tr, const nd_generate_opts *o, nd_generate_result *res,
                nd_error *err) {
  int rc;
  memset(res, 0, sizeof *res);
  if ((rc = check(gen->cfg, o, err))) return rc;
  if ((!gen->ex || gen->prefill_tokens != o->n_prompt) &&
      (rc = open_exec(gen, nd__trainer_kernels(tr), o->n_prompt, err)))
    return rc;
  if ((rc = copy_params(gen, tr, err))) return rc;
  int32_t *ids = malloc((size_t)o->n_prompt * sizeof *ids);
  if (!ids) return nd__fail(err, ND_ENOMEM, "generation: out of memory");
  for (int i = 0; i < o->n_prompt; i++) ids[i] = o->prompt[i];
  uint64_t rng = o->seed;
  double t0 = now_ms();
  rc = forward(gen, gen->prefill_which, ids, o->n_prompt, 0, err);
  free(ids);
  res->prefill_ms = now_ms() - t0;
  t0 = now_ms();
  for (int k = 0; !rc && k < o->tokens; k++) {
    int32_t id = nd__sample(gen->row, gen->owner->V, o->temperature, o->top_k, &rng);
    res->generated++;
    if (o->on_token) o->on_token(o->user, id);
    /* the last id needs no forward of its own */
    if (k + 1 < o->tokens) rc = forward(gen, gen->decode_which, &id, 1, o->n_prompt + k, err);
  }
  res->decode_ms = now_ms() - t0;
  return rc;
}
