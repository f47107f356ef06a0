/* Builds the IR of one training step for a data x tensor x pipeline layout:
 * the state of every rank, then a sequential program of forwards, backwards
 * and held-back W tasks whose buffer reuse the pools allow, then the
 * optimizer tail. The model family (graph/model.h) supplies the blocks,
 * graph/stage.c what happens around them. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "graph/emit.h"
#include "graph/kinds.h"
#include "graph/model.h"
#include "graph/optim.h"

static const nd__model *model_of(const nd_config *cfg) {
  return cfg->model.arch == ND_ARCH_LLAMA ? &nd__llama_model : &nd__gpt2_model;
}

/* Whether replica d's forwards and backwards on stage s are built (pairs
 * NULL: all): those of any of its context ranks' pairs. */
static int built(const nd_graph *g, const uint8_t *pairs, int d, int s) {
  for (int c = 0; pairs && c < g->cp; c++)
    if (pairs[(d * g->cp + c) * g->pp + s]) return 1;
  return !pairs;
}

/* gen_tokens > 0: a generation graph of that many tokens (nd_graph_build_generate);
 * pairs, procs: nd_graph_build_pairs. */
static int build(nd_graph **out, const nd_config *cfg, int forward_only, int gen_tokens, const uint8_t *pairs,
                 int procs, nd_error *err) {
  int rc = ND_ENOMEM;
  const nd__model *m = model_of(cfg);
  nd__builder b = {0};
  nd_graph *g = calloc(1, sizeof *g);
  if (!g) return nd__fail(err, ND_ENOMEM, "graph: out of memory");
  if ((rc = nd__set_layout(g, cfg, err))) goto cleanup;
  g->procs = procs;
  g->NKV = g->NH;
  g->tied = 1; /* GPT-2's head is its embedding */
  if (m->check && (rc = m->check(g, cfg, err))) goto cleanup;
  g->forward_only = forward_only;
  b.cfg = cfg;
  b.recompute = cfg->train.recompute; /* an evaluation pass uses the same buffers */
  if ((rc = nd__builder_init(&b, g, m->acts, m->nparams(g)))) goto cleanup;
  rc = ND_ENOMEM;

  /* state first, in a fixed order, so that a training and an evaluation graph
   * of the same configuration name the same tensors */
  for (int d = 0; d < g->dp; d++)
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++) m->add_rank_params(&b, nd__rank(d, s, t));
  nd__add_stats(&b);
  if (b.oom) goto cleanup;
  if (gen_tokens) {
    /* the parameters (wpe) and the caches span seq_len positions; the activations one submission's tokens */
    g->gen_cache = g->T;
    g->T = gen_tokens;
  }
  /* every gradient and the loss exist now: track which were written */
  b.written = calloc((size_t)g->n_tensors, 1);
  if (!b.written) goto cleanup;
  b.n_state = g->n_tensors;
  if (g->bf16) {
    b.bf16_copy = malloc((size_t)g->n_tensors * sizeof *b.bf16_copy);
    if (!b.bf16_copy) goto cleanup;
    memset(b.bf16_copy, 0xff, (size_t)g->n_tensors * sizeof *b.bf16_copy);
  }

  if (gen_tokens) {
    nd__stage_forward(&b, m, 0, 0, 0);
  } else if (forward_only) {
    for (int k = 0; k < g->micro_batches; k++)
      for (int d = 0; d < g->dp / g->cp; d++)
        for (int s = 0; s < g->pp; s++)
          if (built(g, pairs, d, s)) nd__stage_forward(&b, m, d, s, k);
  } else {
    /* A sequential program in which the last use of a buffer comes before
     * the next write of its slot: on stage s micro-batch k's B follows the
     * forward of k + fwd_s - 1 (FWD_B), and its W the forward of
     * k + fwd_w_s - 1 (FWD_W; so the B of k + wgrad_s - 1, GRAD_W). fwd_s
     * never grows with s, so a stage's B comes after the next stage's B that
     * sends it its gradient. Any such order yields the same dependencies; the
     * scheduler decides what runs when. */
    int span = g->micro_batches + g->pool_slots[0][ND_POOL_FWD_B] - 1;
    b.defer_w = 1;
    for (int i = 0; i < span; i++) {
      if (i < g->micro_batches)
        for (int d = 0; d < g->dp / g->cp; d++)
          for (int s = 0; s < g->pp; s++)
            if (built(g, pairs, d, s)) nd__stage_forward(&b, m, d, s, i);
      for (int s = g->pp - 1; s >= 0; s--) {
        int k = i - g->pool_slots[s][ND_POOL_FWD_B] + 1;
        uint8_t on[g->dp / g->cp]; /* the replicas whose backward is built */
        for (int d = 0; d < g->dp / g->cp; d++) on[d] = (uint8_t)built(g, pairs, d, s);
        if (k >= 0 && k < g->micro_batches) nd__stage_backward(&b, m, on, s, k);
      }
      for (int s = 0; s < g->pp; s++) nd__flush_w(&b, s, i - g->pool_slots[s][ND_POOL_FWD_W] + 1);
    }
    for (int s = 0; s < g->pp; s++) nd__flush_w(&b, s, g->micro_batches);
    nd__optimizer_tail(&b, g->tied ? m->embed : -1);
  }
  if (b.oom) goto cleanup;
  if (b.bad_bf16) {
    rc = nd__fail(err, ND_EINVAL, "graph: a %s task reads or writes a bf16 tensor, which its kernels do not take",
                  nd_task_kind_name(b.bad_bf16 - 1));
    goto cleanup;
  }
  if (b.bad_order) {
    rc = nd__fail(err, ND_EINVAL, "graph: a %s task's buffers differ from its row in graph/kinds.c",
                  nd_task_kind_name(b.bad_order - 1));
    goto cleanup;
  }
  *out = g;
  g = NULL;
  rc = 0;

cleanup:
  if (rc == ND_ENOMEM) nd__fail(err, rc, "graph: out of memory building the step");
  nd_graph_free(g);
  nd__builder_free(&b);
  return rc;
}

int nd_graph_build(nd_graph **out, const nd_config *cfg, int forward_only, nd_error *err) {
  return build(out, cfg, forward_only, 0, NULL, 1, err);
}

int nd_graph_build_pairs(nd_graph **out, const nd_config *cfg, int forward_only, const uint8_t *pairs, int procs,
                         nd_error *err) {
  return build(out, cfg, forward_only, 0, pairs, procs < 1 ? 1 : procs, err);
}

int nd_graph_build_generate(nd_graph **out, const nd_config *cfg, int n_tokens, nd_error *err) {
  if (n_tokens < 1 || n_tokens > cfg->model.seq_len)
    return nd__fail(err, ND_EINVAL, "graph: %d tokens do not fit the %lld positions of model.seq_len", n_tokens,
                    (long long)cfg->model.seq_len);
  /* one sequence through one pipeline of the tensor split; the config is
   * large (paths), so on the heap */
  nd_config *one = malloc(sizeof *one);
  if (!one) return nd__fail(err, ND_ENOMEM, "graph: out of memory");
  *one = *cfg;
  one->parallelism.data_parallel_size = one->parallelism.pipeline_parallel_size = 1;
  one->parallelism.context_parallel_size = 1;
  one->parallelism.micro_batches = one->parallelism.activation_slots = 1;
  one->parallelism.n_stage_layers = 0;
  one->parallelism.data_parallel_shard = ND_DP_SHARD_NONE; /* one replica: nothing to shard */
  one->parallelism.data_parallel_shard_size = 0;
  one->train.micro_batch_size = 1;
  int rc = build(out, one, 1, n_tokens, NULL, 1, err);
  free(one);
  return rc;
}
