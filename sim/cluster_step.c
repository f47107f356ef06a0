/* A step of a layout on a cluster file's GPUs. Whole-step graphs of large
 * runs have millions of tasks (GPT-3 class at 1024 ranks: 9.9M), so the
 * simulation uses two symmetries (docs/clusters.md): every
 * data-parallel replica runs the same pipeline, so one replica is built
 * (dp 1) and the gradients' all-reduce is added as a ring over the
 * data-parallel group after it (not overlapped with the backward); and every
 * rank of a tensor-parallel group does the same work, so the replica is
 * built at tp 1 and each task priced as one rank carries it (1/tp of the
 * split kinds, plus the group's all-reduces: sim/cluster_cost.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "graph/plan.h"
#include "sim/cluster.h"
#include "sim/sched.h"

/* The replica's configuration: dp 1, tp 1, no data-parallel sharding (a group of one). */
static int replica_config(const nd_config *cfg, nd_config *r, nd_error *err) {
  *r = *cfg;
  static const char *const sets[][2] = {{"parallelism.data_parallel_size", "1"},
                                        {"parallelism.tensor_parallel_size", "1"},
                                        {"parallelism.data_parallel_shard", "none"}};
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    int rc = nd_config_set(r, sets[i][0], sets[i][1], err);
    if (rc) return rc;
  }
  return nd_config_validate(r, err);
}

/* One GPU worker per rank of the replica (context ranks x stages), all on
 * one memory node: the simulator moves no data, the sends are tasks priced
 * on the cluster's links. */
static int replica_machine(const nd_graph *g, nd_sim_machine *m) {
  memset(m, 0, sizeof *m);
  int n = g->dp * g->pp;
  if (n > ND_SIM_MAX_WORKERS) return ND_EINVAL;
  m->n_workers = n, m->n_nodes = 2;
  snprintf(m->node_name[0], sizeof m->node_name[0], "host");
  snprintf(m->node_name[1], sizeof m->node_name[1], "%s0", nd_device_name(nd_device_gpu_kind()));
  for (int w = 0; w < n; w++) m->kind[w] = nd_device_gpu_kind(), m->node[w] = 1;
  return 0;
}

/* A duration model for the schedule's priorities and the kinds a GPU runs:
 * every kind, at the cluster's rates (the durations themselves are given). */
static void priority_model(const nd_cluster *c, double gemm_peak, nd_sim_model *model) {
  memset(model, 0, sizeof *model);
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++)
    model->fit[k][nd_device_gpu_kind()] =
        (nd_sim_fit){1, c->launch_s, 1 / (gemm_peak * c->gemm_max), 1 / (c->hbm_bps * c->memory)};
}

/* The fullest GPU's tensors: one rank of the replica's, the tensor-parallel
 * split dividing all but the LayerNorms' (replicated; counted whole anyway:
 * small), the data-parallel shard dividing what it shards. */
static int64_t gpu_bytes(const nd_config *cfg, const nd_graph *g) {
  int tp = (int)cfg->parallelism.tensor_parallel_size, dp = (int)cfg->parallelism.data_parallel_size;
  enum nd_dp_shard sh = cfg->parallelism.data_parallel_shard;
  double most = 0, *rank = calloc((size_t)(g->dp * g->pp), sizeof *rank);
  if (!rank) return -1;
  for (int32_t x = 0; x < g->n_tensors; x++) {
    const nd_tensor *t = &g->tensors[x];
    double b = (double)t->bytes / tp;
    if ((t->kind == ND_TENSOR_OPTSTATE && sh >= ND_DP_SHARD_OPTIMIZER) ||
        (t->kind == ND_TENSOR_GRAD && sh >= ND_DP_SHARD_GRADIENTS) ||
        (t->kind == ND_TENSOR_PARAM && sh >= ND_DP_SHARD_PARAMETERS))
      b /= dp;
    rank[nd_rank_index(g, t->home)] += b;
  }
  for (int r = 0; r < g->dp * g->pp; r++) most = fmax(most, rank[r]);
  free(rank);
  return (int64_t)most;
}

/* The gradients one GPU sums over the data-parallel group: its stage's, 1/tp,
 * each element in the graph's dtype or the cluster's grad_allreduce_bytes. */
static double grad_bytes(const nd_graph *g, int tp, const nd_cluster *c) {
  double most = 0;
  for (int s = 0; s < g->pp; s++) {
    double b = 0;
    for (int32_t x = 0; x < g->n_tensors; x++) {
      const nd_tensor *t = &g->tensors[x];
      if (t->kind == ND_TENSOR_GRAD && t->home.pp == s && t->home.dp == 0)
        b += c->grad_bytes > 0 ? (double)t->bytes / nd_dtype_size(t->dtype) * c->grad_bytes : (double)t->bytes;
    }
    most = fmax(most, b / tp);
  }
  return most;
}

int nd_cluster_simulate(const nd_config *cfg, const nd_cluster *c, nd_cluster_step *out, nd_error *err) {
  memset(out, 0, sizeof *out);
  const char *origin = nd__config_origin(cfg, NULL);
  int dp = (int)cfg->parallelism.data_parallel_size, tp = (int)cfg->parallelism.tensor_parallel_size;
  int pp = (int)cfg->parallelism.pipeline_parallel_size, cp = (int)cfg->parallelism.context_parallel_size;
  out->gpus = dp * cp * tp * pp;
  if (tp > c->gpus_per_node)
    return nd__fail(err, ND_ECONFIG, "%s: tensor parallel %d: the cluster %s has %d GPUs a node (tensor-parallel "
                    "groups stay inside a node)", origin, tp, c->name, c->gpus_per_node);
  if ((int64_t)out->gpus > (int64_t)c->nodes * c->gpus_per_node)
    return nd__fail(err, ND_ECONFIG, "%s: dp %d x cp %d x tp %d x pp %d = %d GPUs: the cluster %s has %d", origin, dp,
                    cp, tp, pp, out->gpus, c->name, c->nodes * c->gpus_per_node);
  if (cp * pp > ND_SIM_MAX_WORKERS)
    return nd__fail(err, ND_ECONFIG, "%s: cp %d x pp %d: the simulator holds at most %d ranks of a replica", origin,
                    cp, pp, ND_SIM_MAX_WORKERS);
  nd_config rcfg;
  nd_graph *g = NULL;
  nd_edges e = {0};
  nd_sim_schedule s = {0};
  nd_sim_machine m;
  nd_sim_model model;
  nd_sim_result r;
  double *duration = NULL, gemm_peak = nd_cluster_gemm_peak(c, cfg);
  int rc = replica_config(cfg, &rcfg, err);
  if (!rc) rc = nd_graph_build(&g, &rcfg, 0, err);
  if (rc) goto done;
  if ((rc = nd_graph_edges(g, &e)) || !(duration = malloc((size_t)g->n_tasks * sizeof *duration))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: cluster simulation: out of memory", origin);
    goto done;
  }
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    duration[i] = nd_cluster_task_s(c, g, t, tp, gemm_peak);
    out->model_flops += (double)nd_plan_model_flops(t) * dp;
  }
  replica_machine(g, &m);
  priority_model(c, gemm_peak, &model);
  const char *policy = nd_sim_policy_known(cfg->runtime.scheduler) ? cfg->runtime.scheduler : "ndws";
  if ((rc = nd_sim_schedule_build(g, &e, &m, &model, policy, ND_PLACEMENT_STRICT, 1, cfg->runtime.priorities, &s)) ||
      (rc = nd_sim_run(g, &e, &m, &model, duration, &s, &r))) {
    rc = nd__fail(err, rc, "%s: cluster simulation failed: %s", origin, nd_strerror(rc));
    goto done;
  }
  /* the data-parallel group of a GPU: one GPU a replica; across nodes (on
   * that GPU's share of the NICs) as soon as a replica fills a node */
  int across = (int64_t)cp * tp * pp * dp > c->gpus_per_node;
  double bps = across ? c->inter_bps / c->gpus_per_node : c->intra_bps;
  out->pipeline_s = r.step_s;
  out->dp_allreduce_s =
      nd_ring_allreduce_s(dp, grad_bytes(g, tp, c), bps, across ? c->inter_latency_s : c->intra_latency_s);
  out->step_s = out->pipeline_s + out->dp_allreduce_s;
  out->bubble = r.bubble;
  out->tokens_per_s = (double)(cfg->train.micro_batch_size * cfg->parallelism.micro_batches * dp) *
                      (double)cfg->model.seq_len / out->step_s;
  out->tflops_per_gpu = out->model_flops / out->step_s / out->gpus / 1e12;
  if ((out->gpu_bytes = gpu_bytes(cfg, g)) < 0) rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", origin);
done:
  nd_sim_schedule_free(&s);
  free(duration);
  nd_edges_free(&e);
  nd_graph_free(g);
  return rc;
}

int nd_cluster_step_seconds(const nd_config *cfg, const char *cluster_path, double *step_s, nd_error *err) {
  nd_cluster c;
  nd_cluster_step st;
  int rc = nd_cluster_load(&c, cluster_path, err);
  if (!rc) rc = nd_cluster_simulate(cfg, &c, &st, err);
  *step_s = rc ? 0 : st.step_s;
  return rc;
}
