/* A step's plan from its IR alone: task counts, FLOPs, bytes moved,
 * critical path and memory per rank, as text or JSON. */
#include "graph/plan.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/error.h"
#include "graph/kinds.h"
#include "graph/shard.h"

int64_t nd_plan_model_flops(const nd_task *t) {
  /* the model's own arithmetic: not replicas, communication, or the loss's
   * log-sum-exp computed again for the backward */
  if (t->replica || t->kind == ND_TASK_ALLREDUCE || t->kind == ND_TASK_SENDRECV || t->kind == ND_TASK_CE_LSE) return 0;
  /* nor what the kernel computes twice; a plugin's cost (nd_kernels_apply_costs)
   * may give less than the built-in repeated part */
  const nd_kind_row *row = nd_kind(t->kind);
  int64_t repeated = row->repeated ? row->repeated(t) : 0;
  return t->flops > repeated ? t->flops - repeated : 0;
}

int nd_plan_compute(const nd_graph *g, nd_plan *p) {
  memset(p, 0, sizeof *p);
  nd_edges e;
  int rc = nd_graph_edges(g, &e);
  if (rc) return rc;
  int64_t *dist = malloc(((size_t)g->n_tasks + 1) * sizeof *dist);
  int32_t *len = malloc(((size_t)g->n_tasks + 1) * sizeof *len);
  p->n_ranks = g->dp * g->pp * g->tp;
  p->memory = calloc((size_t)p->n_ranks, sizeof *p->memory);
  if (!dist || !len || !p->memory) {
    rc = ND_ENOMEM;
    goto cleanup;
  }
  p->n_tasks = g->n_tasks;
  p->n_tensors = g->n_tensors;
  p->n_edges = e.n_edges;
  /* predecessors always come earlier in the array: one pass is a topological sweep */
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    p->per_kind[t->kind]++;
    p->per_phase[t->phase]++;
    p->flops += t->flops;
    p->model_flops += nd_plan_model_flops(t);
    p->comm_bytes += t->comm_bytes;
    int64_t best = 0;
    int32_t best_len = 0;
    for (int32_t k = e.pred_off[i]; k < e.pred_off[i + 1]; k++)
      if (dist[e.pred[k]] > best || (dist[e.pred[k]] == best && len[e.pred[k]] > best_len)) {
        best = dist[e.pred[k]];
        best_len = len[e.pred[k]];
      }
    dist[i] = best + t->flops;
    len[i] = best_len + 1;
    if (dist[i] > p->critical_flops || (dist[i] == p->critical_flops && len[i] > p->critical_tasks)) {
      p->critical_flops = dist[i];
      p->critical_tasks = len[i];
    }
  }
  for (int d = 0; d < g->dp; d++)
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++) p->memory[nd_rank_index(g, (nd_rank){d, s, t})].rank = (nd_rank){d, s, t};
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    p->memory[nd_rank_index(g, t->home)].bytes[t->kind] += t->bytes;
  }
cleanup:
  free(dist);
  free(len);
  nd_edges_free(&e);
  if (rc) nd_plan_free(p);
  return rc;
}

void nd_plan_free(nd_plan *p) {
  free(p->memory);
  p->memory = NULL;
}

static double mib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

void nd_plan_print(FILE *f, const nd_graph *g, const nd_plan *p) {
  fprintf(f, "layout: data %d x tensor %d x pipeline %d, %d micro-batches of %d x %d tokens, %d activation slots\n",
          g->dp / g->cp, g->tp, g->pp, g->micro_batches, g->B, g->T * g->cp, g->slots);
  if (g->dp_shard != ND_DP_SHARD_NONE)
    fprintf(f, "data-parallel shards: %s, over groups of %d ranks\n", nd_dp_shard_name(g->dp_shard), g->shard_size);
  if (g->cp > 1) /* ranks numbered dp = replica * cp + context rank */
    fprintf(f, "context: %d ranks a replica, %d tokens of each sequence a rank\n", g->cp, g->T);
  fprintf(f, "stages:");
  for (int s = 0; s < g->pp; s++)
    fprintf(f, " [%d: layers %d-%d]", s, g->stage_first[s], g->stage_first[s] + g->stage_layers[s] - 1);
  fprintf(f, "\n%s graph: %lld tasks, %lld tensors, %lld dependencies\n",
          g->forward_only ? "evaluation" : "training-step", (long long)p->n_tasks, (long long)p->n_tensors,
          (long long)p->n_edges);
  fprintf(f, "\ntasks per phase:");
  for (int ph = 0; ph < ND_PHASE_COUNT; ph++)
    fprintf(f, " %s=%lld", nd_phase_name((enum nd_phase)ph), (long long)p->per_phase[ph]);
  fprintf(f, "\ntasks per kind:\n");
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++)
    if (p->per_kind[k])
      fprintf(f, "  %-22s %8lld\n", nd_task_kind_name((enum nd_task_kind)k), (long long)p->per_kind[k]);
  fprintf(f, "\nFLOPs: %.4g total, %.4g of model arithmetic (without repeated work and collectives)\n",
          (double)p->flops, (double)p->model_flops);
  fprintf(f, "critical path: %.4g FLOPs over %lld tasks (%.1f%% of the total)\n", (double)p->critical_flops,
          (long long)p->critical_tasks, p->flops ? 100.0 * (double)p->critical_flops / (double)p->flops : 0.0);
  fprintf(f, "bytes crossing between ranks: %.3f MiB per step\n", mib(p->comm_bytes));
  fprintf(f, "\nmemory per rank (MiB)   params    grads  optimizer  activations  inputs  transient\n");
  for (int i = 0; i < p->n_ranks; i++) {
    const nd_rank_memory *m = &p->memory[i];
    fprintf(f, "  dp %d pp %d tp %d     %9.3f %8.3f %10.3f %12.3f %7.3f %10.3f\n", m->rank.dp, m->rank.pp, m->rank.tp,
            mib(m->bytes[ND_TENSOR_PARAM] + m->bytes[ND_TENSOR_PARAM_COPY]), mib(m->bytes[ND_TENSOR_GRAD]), mib(m->bytes[ND_TENSOR_OPTSTATE]),
            mib(m->bytes[ND_TENSOR_ACTIVATION]), mib(m->bytes[ND_TENSOR_INPUT]),
            mib(m->bytes[ND_TENSOR_GATHERED] + m->bytes[ND_TENSOR_GRAD_BUF] + m->bytes[ND_TENSOR_DP_CHUNK]));
  }
}

cJSON *nd_plan_json(const nd_graph *g, const nd_plan *p) {
  cJSON *root = cJSON_CreateObject();
  cJSON *layout = cJSON_AddObjectToObject(root, "layout");
  cJSON_AddNumberToObject(layout, "data_parallel_size", g->dp / g->cp);
  cJSON_AddNumberToObject(layout, "context_parallel_size", g->cp);
  cJSON_AddNumberToObject(layout, "tensor_parallel_size", g->tp);
  cJSON_AddNumberToObject(layout, "pipeline_parallel_size", g->pp);
  cJSON_AddNumberToObject(layout, "micro_batches", g->micro_batches);
  cJSON_AddNumberToObject(layout, "activation_slots", g->slots);
  cJSON_AddStringToObject(layout, "data_parallel_shard", nd_dp_shard_name(g->dp_shard));
  cJSON_AddNumberToObject(layout, "data_parallel_shard_size", g->shard_size);
  cJSON *stages = cJSON_AddArrayToObject(layout, "stage_layers");
  for (int s = 0; s < g->pp; s++) cJSON_AddItemToArray(stages, cJSON_CreateNumber(g->stage_layers[s]));
  cJSON_AddNumberToObject(root, "tasks", (double)p->n_tasks);
  cJSON_AddNumberToObject(root, "tensors", (double)p->n_tensors);
  cJSON_AddNumberToObject(root, "dependencies", (double)p->n_edges);
  cJSON *phase = cJSON_AddObjectToObject(root, "tasks_per_phase");
  for (int ph = 0; ph < ND_PHASE_COUNT; ph++)
    cJSON_AddNumberToObject(phase, nd_phase_name((enum nd_phase)ph), (double)p->per_phase[ph]);
  cJSON *kind = cJSON_AddObjectToObject(root, "tasks_per_kind");
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++)
    if (p->per_kind[k]) cJSON_AddNumberToObject(kind, nd_task_kind_name((enum nd_task_kind)k), (double)p->per_kind[k]);
  cJSON_AddNumberToObject(root, "flops", (double)p->flops);
  cJSON_AddNumberToObject(root, "model_flops", (double)p->model_flops);
  cJSON_AddNumberToObject(root, "critical_path_flops", (double)p->critical_flops);
  cJSON_AddNumberToObject(root, "critical_path_tasks", (double)p->critical_tasks);
  cJSON_AddNumberToObject(root, "comm_bytes", (double)p->comm_bytes);
  cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
  for (int i = 0; i < p->n_ranks; i++) {
    const nd_rank_memory *m = &p->memory[i];
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "dp", m->rank.dp);
    cJSON_AddNumberToObject(r, "pp", m->rank.pp);
    cJSON_AddNumberToObject(r, "tp", m->rank.tp);
    cJSON_AddNumberToObject(r, "param_bytes", (double)m->bytes[ND_TENSOR_PARAM]);
    cJSON_AddNumberToObject(r, "param_copy_bytes", (double)m->bytes[ND_TENSOR_PARAM_COPY]);
    cJSON_AddNumberToObject(r, "grad_bytes", (double)m->bytes[ND_TENSOR_GRAD]);
    cJSON_AddNumberToObject(r, "optimizer_bytes", (double)m->bytes[ND_TENSOR_OPTSTATE]);
    cJSON_AddNumberToObject(r, "activation_bytes", (double)m->bytes[ND_TENSOR_ACTIVATION]);
    cJSON_AddNumberToObject(r, "input_bytes", (double)m->bytes[ND_TENSOR_INPUT]);
    /* data_parallel_shard: the gathered block weights and the gradient
     * buffers; across processes, the data-parallel chunks */
    cJSON_AddNumberToObject(
        r, "transient_bytes",
        (double)(m->bytes[ND_TENSOR_GATHERED] + m->bytes[ND_TENSOR_GRAD_BUF] + m->bytes[ND_TENSOR_DP_CHUNK]));
    cJSON_AddItemToArray(ranks, r);
  }
  return root;
}

int nd_graph_write_dot(const nd_graph *g, const char *path, nd_error *err) {
  static const char *const colors[ND_PHASE_COUNT] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#9c755f"};
  nd_edges e;
  char *text = NULL;
  size_t len = 0;
  int rc = nd_graph_edges(g, &e);
  if (rc) return nd__fail(err, rc, "%s: out of memory", path);
  /* Built in memory and written atomically: an interrupted or failed write
   * leaves the previous file, never half a graph. */
  FILE *f = open_memstream(&text, &len);
  if (!f) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
    goto done;
  }
  fprintf(f, "digraph step {\n  node [shape=box, style=filled, fontcolor=white, fontsize=10];\n");
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    fprintf(f, "  t%d [label=\"%s\\n(%d,%d,%d)", i, nd_task_kind_name(t->kind), t->rank.dp, t->rank.pp, t->rank.tp);
    if (t->micro_batch >= 0) fprintf(f, " mb %d", t->micro_batch);
    if (t->layer >= 0) fprintf(f, " L%d", t->layer);
    fprintf(f, "\", fillcolor=\"%s\"];\n", colors[t->phase]);
  }
  for (int32_t i = 0; i < g->n_tasks; i++)
    for (int32_t k = e.succ_off[i]; k < e.succ_off[i + 1]; k++) fprintf(f, "  t%d -> t%d;\n", i, e.succ[k]);
  fprintf(f, "}\n");
  if (fclose(f) != 0) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
    goto done;
  }
  rc = nd_write_file_atomic(path, text, len, err);
done:
  free(text);
  nd_edges_free(&e);
  return rc;
}
