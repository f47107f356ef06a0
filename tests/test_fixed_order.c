/* The textbook pipeline orders (graph/priority.c) that the fixed policies
 * run: each is a topological order of the whole graph, and each stage sees
 * its schedule's order of micro-batch units. 1F1B keeps a micro-batch's W
 * beside its B and sends the input gradient after both (1f1b-split between
 * them); ZB-H1 lets the last stage postpone W behind the next forward;
 * ZB-H2 runs more warm-up forwards on the first stage. On the benchmark's
 * model (bench/schedule) with 3 activation slots, the zero-bubble pools let
 * W wait one micro-batch behind its B, and the simulated step (cost-model
 * task times, one worker per stage) of zbh1 is shorter than 1f1b's; with 2
 * slots (ZB-H1's forward depth per stage) so is zbh1's, and ndws's (dynamic,
 * with the timeline's priorities) is no longer than zbh1's at 2 and 3 slots,
 * m = 8 and 16. Under the pipeline priorities a micro-batch's collective
 * outranks its stage's compute tasks. ndws's timeline has the last stage run
 * W right after its B but for the last micro-batches. */
#include <stdlib.h>
#include <string.h>

#include "graph/priority.h"
#include "sim/sched.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

/* Position in `order` of the first (or with last, the last) task of stage
 * st, micro-batch mb, phase ph. */
static int32_t position(const nd_graph *g, const int32_t *order, int st, int mb, enum nd_phase ph, int last) {
  int32_t at = -1;
  for (int32_t k = 0; k < g->n_tasks && (last || at < 0); k++) {
    const nd_task *t = &g->tasks[order[k]];
    if (t->rank.pp == st && t->micro_batch == mb && t->phase == ph) at = k;
  }
  return at;
}

static int32_t first_at(const nd_graph *g, const int32_t *order, int st, int mb, enum nd_phase ph) {
  return position(g, order, st, mb, ph, 0);
}

/* The earliest start key of stage st, micro-batch mb, phase ph. */
static double earliest(const nd_graph *g, const double *start, int st, int mb, enum nd_phase ph) {
  double at = 1e300;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (t->rank.pp == st && t->micro_batch == mb && t->phase == ph && start[i] < at) at = start[i];
  }
  return at;
}

/* The simulated step of `policy` on 2 CPU workers, each task as long as the CPU cost model says. */
/* more: one more assignment, or NULL */
static double simulated_step(const char *policy, const char *slots, int micro_batches, const char *more) {
  char sched[64], mb[64];
  snprintf(sched, sizeof sched, "runtime.scheduler=%s", policy);
  snprintf(mb, sizeof mb, "parallelism.micro_batches=%d", micro_batches);
  const char *ov[] = {sched,
                      slots,
                      "parallelism.pipeline_parallel_size=2",
                      mb,
                      "model.n_layer=4",
                      "model.n_embd=256",
                      "model.seq_len=128",
                      "train.micro_batch_size=4",
                      more,
                      NULL};
  nd_config *cfg = tiny_config(ov);
  nd_graph *g = NULL;
  nd_edges e = {0};
  nd_error err = {0};
  nd_sim_schedule s = {0};
  nd_sim_result r = {0};
  nd_sim_machine m = {.n_workers = 2, .n_nodes = 1};
  nd_sim_model model = {0};
  /* the model gives the priorities the same task times as the run, as the
   * trainer's calibration step does (a zero model gave them none) */
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++)
    model.fit[k][ND_BACKEND_CPU] = (nd_sim_fit){.valid = 1,
                                                .overhead_s = nd_cost_cpu.overhead_s,
                                                .s_per_flop = 1 / nd_cost_cpu.flops_per_s,
                                                .s_per_byte = 1 / nd_cost_cpu.bytes_per_s};
  double *dur = NULL, step = -1;
  if (!cfg || nd_graph_build(&g, cfg, 0, &err) || nd_graph_edges(g, &e)) goto done;
  const int *d0 = g->pool_slots[0], *d1 = g->pool_slots[1];
  if (strcmp(policy, "zbh1") == 0 && strstr(slots, "=3") && micro_batches == 8)
    ok(d1[ND_POOL_GRAD_W] >= 2 && d0[ND_POOL_FWD_B] >= 2,
       "zbh1, %s: the last stage's W may wait behind the next B (wgrad %d), the first stage runs 2 forwards in "
       "flight (%d)",
       slots, d1[ND_POOL_GRAD_W], d0[ND_POOL_FWD_B]);
  else if (strcmp(policy, "zbh1") == 0 && micro_batches == 8)
    ok(d1[ND_POOL_FWD_W] - d1[ND_POOL_FWD_B] >= 1 && d0[ND_POOL_FWD_B] >= 2,
       "zbh1, %s: the last stage's W may wait behind the next B (%d behind), the first stage runs 2 forwards in "
       "flight (%d)",
       slots, d1[ND_POOL_FWD_W] - d1[ND_POOL_FWD_B], d0[ND_POOL_FWD_B]);
  dur = malloc((size_t)g->n_tasks * sizeof *dur);
  for (int32_t i = 0; dur && i < g->n_tasks; i++) dur[i] = nd_task_seconds(&g->tasks[i], &nd_cost_cpu);
  if (dur && !nd_sim_schedule_build(g, &e, &m, &model, policy, ND_PLACEMENT_STRICT, 0, ND_PRIORITY_PIPELINE, &s) &&
      !nd_sim_run(g, &e, &m, &model, dur, &s, &r))
    step = r.step_s;
done:
  nd_sim_schedule_free(&s);
  free(dur);
  nd_edges_free(&e);
  nd_graph_free(g);
  nd_config_free(cfg);
  return step;
}

int main(void) {
  const char *ov[] = {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=8",
                      "parallelism.activation_slots=3", "train.micro_batch_size=1", NULL};
  nd_config *cfg = tiny_config(ov);
  nd_graph *g = NULL;
  nd_edges e = {0};
  nd_error err = {0};
  if (!ok(cfg && nd_graph_build(&g, cfg, 0, &err) == 0 && nd_graph_edges(g, &e) == 0, "graph builds %s", err.msg))
    goto done;
  static const char *const names[] = {"gpipe", "1f1b", "zbh1", "zbh2", "1f1b-split"};
  int last = g->pp - 1;
  int32_t *order = malloc((size_t)g->n_tasks * sizeof *order), *pos = malloc((size_t)g->n_tasks * sizeof *pos);
  for (int kind = 0; kind < 5; kind++) {
    ok(nd_fixed_schedule_of(names[kind]) == kind, "%s is a fixed schedule", names[kind]);
    if (!ok(nd_fixed_order(g, &e, (enum nd_fixed_schedule)kind, order) == 0, "%s: order computed", names[kind]))
      continue;
    for (int32_t k = 0; k < g->n_tasks; k++) pos[k] = -1;
    int perm = 1, topo = 1;
    for (int32_t k = 0; k < g->n_tasks; k++) {
      if (order[k] < 0 || order[k] >= g->n_tasks || pos[order[k]] >= 0)
        perm = 0;
      else
        pos[order[k]] = k;
    }
    for (int32_t i = 0; i < g->n_tasks && perm; i++)
      for (int32_t k = e.pred_off[i]; k < e.pred_off[i + 1]; k++) topo &= pos[e.pred[k]] < pos[i];
    ok(perm && topo, "%s: every task once, each after its predecessors", names[kind]);
    int32_t w0 = first_at(g, order, last, 0, ND_PHASE_W), f1 = first_at(g, order, last, 1, ND_PHASE_F);
    int32_t f2 = first_at(g, order, 0, 2, ND_PHASE_F), b0 = first_at(g, order, 0, 0, ND_PHASE_B);
    /* on the last stage, micro-batch 0's only collective is the send of its input gradient */
    int32_t send0 = first_at(g, order, last, 0, ND_PHASE_COLLECTIVE),
            w0_end = position(g, order, last, 0, ND_PHASE_W, 1);
    if (kind == 1 || kind == 4)
      ok(w0 < f1, "%s: the last stage runs W of micro-batch 0 before the forward of 1", names[kind]);
    if (kind == 0 || kind == 1)
      ok(send0 > w0_end, "%s: the last stage sends micro-batch 0's input gradient after its whole backward",
         names[kind]);
    if (kind == 4) ok(send0 >= 0 && send0 < w0, "1f1b-split: the last stage sends it after B, before W");
    if (kind == 2) ok(w0 > f1, "zbh1: the last stage postpones W of micro-batch 0 behind the forward of 1");
    if (kind == 2) ok(f2 > b0, "zbh1: the first stage keeps 1F1B's two micro-batches in flight");
    if (kind == 3) ok(f2 < b0, "zbh2: the first stage runs a third forward before its first B");
  }
  free(order);
  free(pos);
  /* the pipeline priorities: a micro-batch's collective before any compute */
  int *prio = malloc((size_t)g->n_tasks * sizeof *prio), min_coll = 1 << 30, max_compute = -1;
  if (prio && nd_priorities(g, &e, NULL, ND_PRIORITY_PIPELINE, 0, 1 << 24, prio) == 0)
    for (int32_t i = 0; i < g->n_tasks; i++) {
      const nd_task *t = &g->tasks[i];
      if (t->phase == ND_PHASE_COLLECTIVE && t->micro_batch >= 0 && prio[i] < min_coll) min_coll = prio[i];
      if (t->phase != ND_PHASE_COLLECTIVE && t->micro_batch >= 0 && prio[i] > max_compute) max_compute = prio[i];
    }
  ok(max_compute >= 0 && min_coll > max_compute,
     "pipeline priorities: every micro-batch's collective (%d) outranks every F, B and W task (%d)", min_coll,
     max_compute);
  free(prio);
  /* ndws's timeline, with the last stage twice as slow (its forwards always
   * ready): W right after its B while the cache holds B's outputs, but the
   * last grad_w micro-batches' W's wait behind the next forward for the
   * cool-down */
  double *seconds = malloc((size_t)g->n_tasks * sizeof *seconds), *start = malloc((size_t)g->n_tasks * sizeof *start);
  for (int32_t i = 0; seconds && i < g->n_tasks; i++) seconds[i] = g->tasks[i].rank.pp == last ? 2e-3 : 1e-3;
  int m = g->micro_batches, hot_until = m - g->pool_slots[last][ND_POOL_GRAD_W];
  if (ok(seconds && start && nd_zb_timeline(g, &e, seconds, start) == 0 && hot_until >= 1 && hot_until < m - 1,
         "ndws timeline computed; W right after B for %d of %d micro-batches", hot_until, m)) {
    int hot = 1, cool = 1;
    for (int j = 0; j + 1 < m; j++) {
      double w = earliest(g, start, last, j, ND_PHASE_W), f = earliest(g, start, last, j + 1, ND_PHASE_F);
      if (j < hot_until)
        hot &= w < f;
      else
        cool &= w > f;
    }
    ok(hot, "ndws timeline: the last stage runs W(j) before F(j + 1) for j < %d", hot_until);
    ok(cool, "ndws timeline: and after it from %d on, for the cool-down", hot_until);
  }
  free(seconds);
  free(start);
  double one = simulated_step("1f1b", "parallelism.activation_slots=3", 8, NULL);
  double zb = simulated_step("zbh1", "parallelism.activation_slots=3", 8, NULL);
  ok(one > 0 && zb > 0 && zb < one, "benchmark model, 3 slots, simulated: zbh1 %.1f ms < 1f1b %.1f ms", zb * 1e3,
     one * 1e3);
  /* with 2 slots ZB-H1 fits only with a forward depth per stage (p - s) */
  one = simulated_step("1f1b", "parallelism.activation_slots=2", 8, NULL);
  zb = simulated_step("zbh1", "parallelism.activation_slots=2", 8, NULL);
  ok(one > 0 && zb > 0 && zb < one, "benchmark model, 2 slots, simulated: zbh1 %.1f ms < 1f1b %.1f ms", zb * 1e3,
     one * 1e3);
  /* ndws, free to take any ready task, with the priorities of the zero-bubble
   * timeline: no slower than the fixed ZB-H1 order */
  for (int slots = 2; slots <= 3; slots++)
    for (int m = 8; m <= 16; m += 8) {
      char kv[64];
      snprintf(kv, sizeof kv, "parallelism.activation_slots=%d", slots);
      double nd = simulated_step("ndws", kv, m, NULL);
      zb = simulated_step("zbh1", kv, m, NULL);
      ok(nd > 0 && zb > 0 && nd <= zb * (1 + 1e-9),
         "benchmark model, %d slots, m %d, simulated: ndws %.3f ms <= zbh1 %.3f ms", slots, m, nd * 1e3, zb * 1e3);
    }
  /* 1f1b with layer recomputation: the program orders each stage's F and B
   * as 1F1B runs them (p - s forwards in flight), so the fixed order runs
   * each unit whole, as it does without recomputation */
  for (int slots = 2; slots <= 3; slots++) {
    char kv[64];
    snprintf(kv, sizeof kv, "parallelism.activation_slots=%d", slots);
    one = simulated_step("1f1b", kv, 8, "train.recompute=layer");
    double nd = simulated_step("ndws", kv, 8, "train.recompute=layer");
    ok(one > 0 && nd > 0 && one <= nd * 1.05,
       "benchmark model, %d slots, layer recomputation, simulated: 1f1b %.3f ms within 5%% of ndws %.3f ms", slots,
       one * 1e3, nd * 1e3);
  }
done:
  nd_edges_free(&e);
  nd_graph_free(g);
  nd_config_free(cfg);
  return done_testing();
}
