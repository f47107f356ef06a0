/* What `plan --auto` prints (a table, or {"plans": [...]}), and choosing
 * the best plan for `run` when parallelism.auto is set. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/error.h"
#include "graph/shard.h"
#include "sim/machine.h"
#include "sim/planner.h"

#define ND_PLAN_SHOWN 10

static double mib(int64_t b) { return (double)b / (1024.0 * 1024.0); }

static void print_memory(FILE *out, const nd_planning *p, const nd_candidate *c) {
  for (int n = 0; n < p->machine.n_nodes; n++)
    fprintf(out, "%s%s %.1f MiB", n ? ", " : "", p->machine.node_name[n], mib(c->peak[n]));
}

static void print_sets(FILE *out, const nd_candidate *c) {
  char sets[ND_PLAN_MAX_SETS][64];
  int n = nd_candidate_sets(c, sets);
  for (int i = 0; i < n; i++) fprintf(out, " --set %s", sets[i]);
}

static void print_text(FILE *out, const nd_planning *p) {
  const nd_sim_machine *m = &p->machine;
  int count[ND_BACKEND_COUNT] = {0};
  for (int w = 0; w < m->n_workers; w++) count[m->kind[w]]++;
  fprintf(out, "machine:");
  for (int k = 0; k < ND_BACKEND_COUNT; k++)
    if (count[k]) fprintf(out, " %d %s", count[k], nd_device_name(k));
  fprintf(out, " worker(s); calibration: %s\n", p->cal.machine);
  fprintf(out,
          "global batch: %lld sequences of %lld tokens; %d layouts simulated, %d rejected for memory, in %.2f s\n",
          (long long)p->global_batch, (long long)p->seq_len, p->n_plans + p->n_rejected, p->n_rejected, p->seconds);
  if (p->n_extrapolated)
    fprintf(out,
            "%d layouts have stages of more than %d layers: simulated with %d and %d layers in the shortest stage, "
            "extrapolated per layer\n",
            p->n_extrapolated, ND_PLAN_LAYERS_WHOLE, ND_PLAN_LAYERS_STEP, 2 * ND_PLAN_LAYERS_STEP);
  if (p->rank_limit)
    fprintf(out, "runtime.device_memory: %.1f MiB a rank\n", mib(p->rank_limit));
  if (p->n_untimed)
    fprintf(out, "%d sharded, recomputed or context-parallel layouts not simulated: the calibration does not time %s\n", p->n_untimed,
            nd_task_kind_name((enum nd_task_kind)p->untimed_kind));
  fprintf(out, "\n");
  fprintf(out, " #  step ms   tokens/s  bubble  dp cp tp pp  mb x seq  slots  stages     recompute shard       rank MiB  "
               "placement scheduler  peak memory\n");
  for (int i = 0; i < p->n_plans && i < ND_PLAN_SHOWN; i++) {
    const nd_candidate *c = &p->plans[i];
    char stages[48] = "even";
    for (int s = 0, at = 0; c->uneven && s < c->pp && at < 40; s++)
      at += snprintf(stages + at, sizeof stages - (size_t)at, s ? ",%d" : "%d", c->stage_layers[s]);
    fprintf(out, "%2d %8.2f %10.0f %6.1f%%  %2d %2d %2d %2d  %3d x %-3d %5d  %-10s %-9s %-10s %9.1f  %-9s %-9s  ", i + 1,
            c->step_s * 1e3, c->tokens_per_s, 100 * c->bubble, c->dp, c->cp, c->tp, c->pp, c->micro_batches,
            c->micro_batch_size, c->slots, stages, nd_recompute_name(c->recompute), nd_dp_shard_name(c->shard),
            mib(c->rank_bytes), (const char *[]){"affinity", "strict", "free"}[c->placement], c->scheduler);
    print_memory(out, p, c);
    fprintf(out, "\n");
  }
  fprintf(out, "\nbest:");
  print_sets(out, &p->plans[0]);
  fprintf(out, "\n");
  if (p->n_rejected) fprintf(out, "\nrejected for memory:\n");
  for (int i = 0; i < p->n_rejected && i < ND_PLAN_SHOWN; i++) {
    const nd_candidate *c = &p->rejected[i];
    fprintf(out, "  dp %d cp %d tp %d pp %d, %d x %d, %d slots, recompute %s, shard %s, %s, %s: %s\n", c->dp, c->cp, c->tp,
            c->pp, c->micro_batches, c->micro_batch_size, c->slots, nd_recompute_name(c->recompute),
            nd_dp_shard_name(c->shard), (const char *[]){"affinity", "strict", "free"}[c->placement], c->scheduler,
            c->reason);
  }
  if (p->n_rejected > ND_PLAN_SHOWN) fprintf(out, "  ... and %d more\n", p->n_rejected - ND_PLAN_SHOWN);
}

static cJSON *plan_json(const nd_planning *p, const nd_candidate *c, int rejected) {
  cJSON *o = cJSON_CreateObject(), *sets = cJSON_AddArrayToObject(o, "set"), *peak = cJSON_CreateObject();
  char s[ND_PLAN_MAX_SETS][64];
  int n = nd_candidate_sets(c, s);
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(sets, cJSON_CreateString(s[i]));
  if (rejected)
    cJSON_AddStringToObject(o, "reason", c->reason);
  else {
    cJSON_AddNumberToObject(o, "predicted_step_ms", c->step_s * 1e3);
    cJSON_AddNumberToObject(o, "tokens_per_s", c->tokens_per_s);
    cJSON_AddNumberToObject(o, "bubble", c->bubble);
    cJSON *busy = cJSON_AddArrayToObject(o, "busy_ms"); /* per worker, CPU workers first */
    for (int w = 0; w < p->machine.n_workers; w++) cJSON_AddItemToArray(busy, cJSON_CreateNumber(c->busy_s[w] * 1e3));
  }
  for (int d = 0; d < p->machine.n_nodes; d++)
    cJSON_AddNumberToObject(peak, p->machine.node_name[d], (double)c->peak[d]);
  cJSON_AddItemToObject(o, "peak_memory_bytes", peak);
  cJSON_AddNumberToObject(o, "rank_memory_bytes", (double)c->rank_bytes);
  return o;
}

static int print_json(FILE *out, const nd_planning *p) {
  cJSON *root = cJSON_CreateObject(), *plans = cJSON_AddArrayToObject(root, "plans");
  cJSON *rejected = cJSON_AddArrayToObject(root, "rejected");
  for (int i = 0; i < p->n_plans; i++) cJSON_AddItemToArray(plans, plan_json(p, &p->plans[i], 0));
  for (int i = 0; i < p->n_rejected; i++) cJSON_AddItemToArray(rejected, plan_json(p, &p->rejected[i], 1));
  cJSON_AddNumberToObject(root, "global_batch", (double)p->global_batch);
  cJSON_AddNumberToObject(root, "planning_seconds", p->seconds);
  cJSON_AddNumberToObject(root, "extrapolated_layouts", p->n_extrapolated);
  cJSON_AddNumberToObject(root, "rank_memory_limit_bytes", (double)p->rank_limit);
  cJSON_AddNumberToObject(root, "untimed_layouts", p->n_untimed);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return ND_ENOMEM;
  fprintf(out, "%s\n", text);
  free(text);
  return 0;
}

/* Sets cfg to candidate c's layout; "using" and the --set list on out when not NULL. */
static int apply(nd_config *cfg, const nd_candidate *c, FILE *out, nd_error *err) {
  char sets[ND_PLAN_MAX_SETS][64];
  int n = nd_candidate_sets(c, sets), rc = 0;
  if (out) fprintf(out, "using");
  for (int i = 0; i < n && !rc; i++) {
    if (out) fprintf(out, " %s", sets[i]);
    char *eq = strchr(sets[i], '=');
    *eq = 0;
    rc = nd_config_set(cfg, sets[i], eq + 1, err);
  }
  if (out) fprintf(out, "\n");
  return rc ? rc : nd_config_validate(cfg, err);
}

int nd_plan_auto(nd_config *cfg, const char *calibration, int processes, FILE *out, int json, nd_error *err) {
  nd_planning p;
  int rc = nd_planning_run(&p, cfg, calibration, processes, err);
  if (rc) return rc;
  if (json)
    rc = print_json(out, &p);
  else
    print_text(out, &p);
  if (rc) rc = nd__fail(err, rc, "plan --auto: out of memory");
  if (!rc) rc = apply(cfg, &p.plans[0], NULL, err);
  nd_planning_free(&p);
  return rc;
}

int nd_plan_auto_apply(nd_config *cfg, const char *calibration, int processes, FILE *out, nd_error *err) {
  nd_planning p;
  int rc = nd_sim_machine_check_here(cfg, err);
  if (!rc) rc = nd_planning_run(&p, cfg, calibration, processes, err);
  if (rc) return rc;
  fprintf(out, "parallelism.auto: predicted %.2f ms per step (%d layouts simulated); ", p.plans[0].step_s * 1e3,
          p.n_plans);
  rc = apply(cfg, &p.plans[0], out, err);
  nd_planning_free(&p);
  return rc;
}
