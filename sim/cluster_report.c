/* `ndgraph plan --cluster FILE`: a layout's simulated step on a cluster, or
 * with --auto the layouts of the model and global batch on all its GPUs,
 * ranked. Only the memory options a layout needs are tried (as plan --auto
 * does on one machine): recomputation, then the data-parallel shards, then
 * context parallelism, each where the one before does not fit the GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "graph/shard.h"
#include "ndgraph/ndgraph.h"
#include "sim/cluster.h"
#include "sim/planner.h"

#define ND_CLUSTER_SHOWN 10

typedef struct layout {
  int dp, cp, tp, pp, micro_batches, mbs;
  enum nd_recompute recompute;
  enum nd_dp_shard shard;
  nd_cluster_step st;
} layout;

static double gib(int64_t b) { return (double)b / (1024.0 * 1024 * 1024); }

static void print_step(FILE *out, const nd_cluster *c, const nd_cluster_step *st) {
  fprintf(out,
          "cluster %s: %d GPUs of %d (%s)\n  step %.3f s (pipeline %.3f s, data-parallel all-reduce %.3f s after it), "
          "bubble %.1f%%\n  %.0f tokens/s, %.1f model TFLOP/s per GPU, fullest GPU %.1f GiB of %.1f%s\n",
          c->name, st->gpus, c->nodes * c->gpus_per_node, c->gpu, st->step_s, st->pipeline_s, st->dp_allreduce_s,
          100 * st->bubble, st->tokens_per_s, st->tflops_per_gpu, gib(st->gpu_bytes), gib(c->hbm_bytes),
          st->gpu_bytes > c->hbm_bytes ? ": DOES NOT FIT" : "");
}

/* cfg at layout l; 1 when the configuration refuses it. */
static int set_layout(const nd_config *base, const layout *l, nd_config *cfg) {
  char v[9][32];
  const char *keys[9] = {"parallelism.data_parallel_size", "parallelism.context_parallel_size",
                         "parallelism.tensor_parallel_size", "parallelism.pipeline_parallel_size",
                         "parallelism.micro_batches", "train.micro_batch_size", "train.recompute",
                         "parallelism.data_parallel_shard", "parallelism.activation_slots"};
  snprintf(v[0], 32, "%d", l->dp), snprintf(v[1], 32, "%d", l->cp), snprintf(v[2], 32, "%d", l->tp);
  snprintf(v[3], 32, "%d", l->pp), snprintf(v[4], 32, "%d", l->micro_batches), snprintf(v[5], 32, "%d", l->mbs);
  snprintf(v[6], 32, "%s", nd_recompute_name(l->recompute)), snprintf(v[7], 32, "%s", nd_dp_shard_name(l->shard));
  snprintf(v[8], 32, "%d", l->pp < l->micro_batches ? l->pp : l->micro_batches);
  *cfg = *base;
  nd_error ignored = {0};
  for (int i = 0; i < 9; i++)
    if (nd_config_set(cfg, keys[i], v[i], &ignored)) return 1;
  return nd_config_validate(cfg, &ignored) ? 1 : 0;
}

static int by_step(const void *a, const void *b) {
  const layout *x = a, *y = b;
  return (x->st.step_s > y->st.step_s) - (x->st.step_s < y->st.step_s);
}

/* Layout l simulated under the memory options it needs; 1: it fits (filed in *ls). */
static int try_layout(const nd_config *base, const nd_cluster *c, layout l, layout **ls, int *n, nd_error *err) {
  static const enum nd_recompute rec[] = {ND_RECOMPUTE_NONE, ND_RECOMPUTE_LAYER};
  static const enum nd_dp_shard shards[] = {ND_DP_SHARD_NONE, ND_DP_SHARD_OPTIMIZER, ND_DP_SHARD_GRADIENTS};
  for (int cp = 1; cp <= 8; cp *= 2)
    for (size_t sh = 0; sh < 3; sh++)
      for (size_t r = 0; r < 2; r++) {
        l.cp = cp, l.shard = shards[sh], l.recompute = rec[r];
        if ((sh && l.dp < 2) || (int64_t)l.dp * cp * l.tp * l.pp > (int64_t)c->nodes * c->gpus_per_node) continue;
        nd_config cfg;
        if (set_layout(base, &l, &cfg)) continue;
        int rc = nd_cluster_simulate(&cfg, c, &l.st, err);
        if (rc == ND_ECONFIG) continue; /* the layout does not fit the cluster's shape */
        if (rc) return rc;
        if (l.st.gpu_bytes > c->hbm_bytes) continue;
        layout *p = realloc(*ls, (size_t)(*n + 1) * sizeof *p);
        if (!p) return nd__fail(err, ND_ENOMEM, "plan --cluster: out of memory");
        *ls = p;
        (*ls)[(*n)++] = l;
        return 1;
      }
  return 0;
}

/* Every dp x tp x pp within the cluster's GPUs (dp dividing the global
 * batch, tp inside a node dividing n_head, pp dividing n_layer), micro-batches of 1, 2, 4, 8
 * sequences dividing the replica's share of the global batch. */
static int rank_layouts(const nd_config *cfg, const nd_cluster *c, FILE *out, nd_error *err) {
  int gpus = c->nodes * c->gpus_per_node, n = 0, rc = 0, tried = 0;
  int64_t global = cfg->train.micro_batch_size * cfg->parallelism.micro_batches * cfg->parallelism.data_parallel_size;
  layout *ls = NULL;
  clock_t t0 = clock();
  for (int tp = 1; tp <= c->gpus_per_node && rc >= 0; tp *= 2)
    for (int pp = 1; pp <= ND_MAX_STAGES && pp <= ND_SIM_MAX_WORKERS && rc >= 0; pp++) {
      if (cfg->model.n_head % tp || cfg->model.n_layer % pp) continue;
      for (int dp = 1; dp * tp * pp <= gpus && dp <= global && rc >= 0; dp++)
      for (int mbs = 1; mbs <= 8 && rc >= 0; mbs *= 2) {
        if (global % dp) continue;
        if ((global / dp) % mbs) continue;
        layout l = {.dp = dp, .tp = tp, .pp = pp, .mbs = mbs, .micro_batches = (int)(global / dp / mbs)};
        tried++;
        rc = try_layout(cfg, c, l, &ls, &n, err);
      }
    }
  if (rc < 0) {
    free(ls);
    return rc;
  }
  if (!n) {
    free(ls);
    return nd__fail(err, ND_ECONFIG, "%s: plan --auto --cluster: none of %d layouts on up to %d GPUs of %s fits %.1f GiB a GPU",
                    nd__config_origin(cfg, NULL), tried, gpus, c->name, gib(c->hbm_bytes));
  }
  qsort(ls, (size_t)n, sizeof *ls, by_step);
  fprintf(out, "cluster %s: %d nodes x %d %s; %d layouts on up to %d GPUs, %d fit, in %.1f s\n", c->name, c->nodes,
          c->gpus_per_node, c->gpu, tried, gpus, n, (double)(clock() - t0) / CLOCKS_PER_SEC);
  fprintf(out, " #   step s   tokens/s  TFLOP/s  bubble    dp  cp tp pp  mb x seq   recompute shard      GiB/GPU\n");
  for (int i = 0; i < n && i < ND_CLUSTER_SHOWN; i++) {
    const layout *l = &ls[i];
    fprintf(out, "%2d %8.3f %10.0f %8.1f %6.1f%%  %4d %3d %2d %2d  %3d x %-4d  %-9s %-10s %7.1f\n", i + 1, l->st.step_s,
            l->st.tokens_per_s, l->st.tflops_per_gpu, 100 * l->st.bubble, l->dp, l->cp, l->tp, l->pp,
            l->micro_batches, l->mbs, nd_recompute_name(l->recompute), nd_dp_shard_name(l->shard),
            gib(l->st.gpu_bytes));
  }
  free(ls);
  return 0;
}

int nd_plan_cluster(const nd_config *cfg, const char *cluster, int autoplan, FILE *out, nd_error *err) {
  nd_cluster c;
  nd_cluster_step st;
  int rc = nd_cluster_load(&c, cluster, err);
  if (rc) return rc;
  if (autoplan) return rank_layouts(cfg, &c, out, err);
  if (!(rc = nd_cluster_simulate(cfg, &c, &st, err))) print_step(out, &c, &st);
  return rc;
}
