/* bench/schedule: policies side by side on the same pipeline graph and
 * kernels. pipeline_parallel_size 2, strict placement, one worker per stage,
 * the model of issue 13 (n_embd 256, 4 layers, seq_len 128, 4 sequences per
 * micro-batch). For each (slots, m) the policies run in turn, ROUNDS times
 * (interleaved, so that a noisy machine slows them alike; round r starts at
 * policy r, so that none always runs first); each run gives its
 * median step, and a row is the median of its runs. Beside the step time:
 * the ratios to 1f1b and zbh1, and ndws's step over the row's (above 1.03:
 * the row is more than 3% faster than ndws); the lower bound from the task durations of
 * that step: a stage cannot start before the forward of micro-batch 0 reaches
 * it, runs its own work one task at a time, and after its last task the path
 * to the step's end remains (bench/run.h's worker bound; with strict
 * placement every policy runs the same tasks on the same worker, so no order
 * beats it); that bound over 1f1b's step (the best ratio any order could
 * reach), efficiency = bound / step, the idle fraction of each stage and of
 * both, the part of that idle time during which the next task was ready
 * (the runtime's or the machine's: graph/bound.h), and 1F1B's theoretical
 * bubble. POLICY@PLACEMENT runs a policy under another runtime.placement
 * (ndws@affinity: the default placement, where a worker may take the other
 * stage's tasks); such a row's bound is
 * max(critical path, work / 2), since its tasks may run on either worker.
 * POLICY#STAGES cuts the 4 layers into STAGES pipeline stages on the same 2
 * workers (ndws#4: two one-layer stages a worker, which share it in V order,
 * placement/placement.c); bubble s0 and s1 are then the workers'.
 * POLICY~WAIT sets runtime.wait_policy (ndws~passive: idle workers sleep
 * after a millisecond even while the step runs; ndws~active: they poll but
 * take no part of another worker's kernel; 1f1b~help: the fixed order's
 * idle workers take row blocks of the other's matrix products, as ndws's do).
 * A second table pairs the runs by round: ndws's step over each row's in the
 * same round (the machine's drift between rounds cancels in the pair), the
 * median over the rounds, its 95% confidence interval, the lowest and
 * highest, and in how many rounds ndws was the faster, so that the spread
 * between runs is on the page next to the differences it could explain;
 * and the median of ndws's work (its tasks' summed durations) over the
 * row's, which tells an order that made the same tasks slower from one that
 * left workers idle. A policy named twice runs twice,
 * the second as "POLICY (again)": the references are the first, and ndws
 * against itself is the machine's noise measured in the same run.
 *
 *   bench/schedule [STEPS] [POLICY[:PRIORITIES][@PLACEMENT][#STAGES][~WAIT],...] [SLOTS,...] [M,...] [ROUNDS]
 *   (defaults 3; every policy: ndws,ndws:critical-path,1f1b,1f1b-split,zbh1,zbh2,gpipe,eager,prio,ws,lws,dmda,dmdas,
 *   ndws@affinity,ndws#4,zbh1#4,ndws~active,1f1b~help; 2,3; 2,4,8,16; 3) */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/run.h"

#define MAX_LIST 24

/* ndws's step and work over one row's, paired by round. */
typedef struct paired {
  int slots, m;
  const char *policy;
  nd_bench_paired q, work;
} paired;

static void print_paired(const paired *pr, int n) {
  if (n == 0) return;
  printf("\nndws's step over each row's, paired by round (each round runs every policy once, so that the machine's\n"
         "drift between rounds cancels): the median over the rounds, its 95%% confidence interval (bench/paired.h: a\n"
         "ratio whose interval holds 1 is not resolved by this run), the lowest and the highest, in how many\n"
         "rounds ndws was the faster, and the median of ndws's work (the sum of its median step's task durations)\n"
         "over the row's: above 1, ndws's order made the same tasks slower\n\n");
  printf("| slots | m  | policy             | ndws / (paired) | 95%% interval | lowest | highest | ndws faster | "
         "work ndws / |\n");
  printf("|------:|---:|--------------------|----------------:|-------------:|-------:|--------:|------------:|-"
         "-----------:|\n");
  for (int i = 0; i < n; i++) {
    char faster[24], interval[32];
    snprintf(faster, sizeof faster, "%d/%d", pr[i].q.faster, pr[i].q.rounds);
    printf("| %5d | %2d | %-18s | %15.3f | %12s | %6.3f | %7.3f | %11s | %11.3f |\n", pr[i].slots, pr[i].m,
           pr[i].policy, pr[i].q.median, nd_bench_interval(interval, &pr[i].q), pr[i].q.lowest, pr[i].q.highest, faster,
           pr[i].work.median);
  }
}

/* a / b to three decimals, or "-" where the run has no row b to compare with */
static const char *ratio(char out[16], double a, double b) {
  if (a > 0 && b > 0)
    snprintf(out, 16, "%.3f", a / b);
  else
    snprintf(out, 16, "-");
  return out;
}

static int split(char *s, char **out) {
  int n = 0;
  for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ","))
    if (n < MAX_LIST)
      out[n++] = tok;
    else
      return 0; /* too many: refused as an empty list is */
  return n;
}

/* A row's name, POLICY[:PRIORITIES][@PLACEMENT][#STAGES][~WAIT], in its parts. */
typedef struct row_spec {
  char policy[32], priorities[32], placement[32], stages[32], wait[32];
} row_spec;

#define MARKS ":@#~"

/* The part of a row's name after `mark`, up to the next mark, or otherwise. */
static void part(char *out, size_t size, const char *name, char mark, const char *otherwise) {
  const char *from = strchr(name, mark);
  if (from)
    snprintf(out, size, "%.*s", (int)strcspn(from + 1, MARKS), from + 1);
  else
    snprintf(out, size, "%s", otherwise);
}

static row_spec spec_of(const char *name) {
  row_spec r;
  snprintf(r.policy, sizeof r.policy, "%.*s", (int)strcspn(name, MARKS), name);
  part(r.priorities, sizeof r.priorities, name, ':', "pipeline");
  part(r.placement, sizeof r.placement, name, '@', "strict");
  part(r.stages, sizeof r.stages, name, '#', "2");
  part(r.wait, sizeof r.wait, name, '~', "auto");
  return r;
}

/* A row's configuration: its --set assignments, then the benchmark's model; kv ends with NULL. */
typedef struct row_config {
  char set[7][80];
  const char *kv[17];
} row_config;

static void configure(row_config *c, const char *policy, int m, int slots) {
  /* "ndws:critical-path@affinity#4~passive" selects the priority order, the placement, the stages and the
   * idle workers' wait too */
  row_spec r = spec_of(policy);
  snprintf(c->set[0], sizeof c->set[0], "runtime.scheduler=%s", r.policy);
  snprintf(c->set[1], sizeof c->set[1], "runtime.priorities=%s", r.priorities);
  snprintf(c->set[2], sizeof c->set[2], "parallelism.micro_batches=%d", m);
  snprintf(c->set[3], sizeof c->set[3], "parallelism.activation_slots=%d", slots < m ? slots : m);
  snprintf(c->set[4], sizeof c->set[4], "runtime.placement=%s", r.placement);
  snprintf(c->set[5], sizeof c->set[5], "parallelism.pipeline_parallel_size=%s", r.stages);
  snprintf(c->set[6], sizeof c->set[6], "runtime.wait_policy=%s", r.wait);
  static const char *const model[] = {"model.n_layer=4",    "model.n_embd=256",         "model.n_head=4",
                                      "model.seq_len=128",  "train.micro_batch_size=4", "runtime.workers=2",
                                      "train.eval_every=0", "train.save_dir=",          "train.steps=100"};
  int n = 0;
  for (size_t i = 0; i < sizeof c->set / sizeof *c->set; i++) c->kv[n++] = c->set[i];
  for (size_t i = 0; i < sizeof model / sizeof *model; i++) c->kv[n++] = model[i];
  c->kv[n] = NULL;
}

/* Every row's name must be a valid configuration before the first run, so
 * that a typo stops the benchmark at once, not after an hour of rows. */
static int check_row(const char *me, const char *policy, int m, int slots) {
  row_config c;
  nd_config *cfg;
  nd_error err = {0};
  configure(&c, policy, m, slots);
  if (nd_config_new(&cfg)) return -1;
  int rc = nd_bench_config(cfg, c.kv, &err);
  if (!rc) rc = nd_config_validate(cfg, &err);
  if (rc) fprintf(stderr, "%s: row '%s': %s\n", me, policy, err.msg);
  nd_config_free(cfg);
  return rc;
}

static int run(const char *policy, int m, int slots, int steps, nd_bench_row *out) {
  row_config c;
  configure(&c, policy, m, slots);
  if (nd_bench_run(c.kv, steps, out)) {
    fprintf(stderr, "bench/schedule: %s, m %d, slots %d failed\n", policy, m, slots);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  nd_blas_select_kernels(argv);
  const char *me = "bench/schedule";
  int steps = argc > 1 ? nd_bench_count(me, "STEPS", argv[1], 1, 1000) : 3;
  int rounds = argc > 5 ? nd_bench_count(me, "ROUNDS", argv[5], 1, ND_BENCH_MAX_ROUNDS) : 3;
  if (steps < 0 || rounds < 0) return 2;
  char pol_s[] = "ndws,ndws:critical-path,1f1b,1f1b-split,zbh1,zbh2,gpipe,eager,prio,ws,lws,dmda,dmdas,ndws@affinity,"
                 "ndws#4,zbh1#4,ndws~active,1f1b~help",
       slots_s[] = "2,3", m_s[] = "2,4,8,16";
  char *pols[MAX_LIST], *slot_l[MAX_LIST], *m_l[MAX_LIST];
  int n_pol = split(argc > 2 ? argv[2] : pol_s, pols), n_slots = split(argc > 3 ? argv[3] : slots_s, slot_l);
  int n_m = split(argc > 4 ? argv[4] : m_s, m_l), slot_n[MAX_LIST], m_n[MAX_LIST];
  if (n_pol == 0 || n_slots == 0 || n_m == 0) {
    fprintf(stderr, "%s: a list of policies, slots or micro-batch counts is empty or longer than %d\n", me, MAX_LIST);
    return 2;
  }
  for (int i = 0; i < n_slots; i++)
    if ((slot_n[i] = nd_bench_count(me, "SLOTS", slot_l[i], 1, 64)) < 0) return 2;
  for (int i = 0; i < n_m; i++)
    if ((m_n[i] = nd_bench_count(me, "M", m_l[i], 1, 1024)) < 0) return 2;
  for (int p = 0; p < n_pol; p++)
    for (int i = 0; i < n_slots; i++)
      for (int j = 0; j < n_m; j++)
        if (check_row(me, pols[p], m_n[j], slot_n[i])) return 2;
  printf("pp=2, strict placement (unless a row says @PLACEMENT; #4: 4 stages, two a worker in V order), 2 workers, "
         "n_embd 256, 4 layers, seq_len 128, 4 sequences per micro-batch;\n"
         "each row: median of %d runs interleaved with the other policies (round r starting at policy r), each run\n"
         "the median of %d steps after "
         "one calibration step; bound: the start of the last stage + its work + the path after it, from that\n"
         "step's measured tasks (no order of these tasks on these workers is faster); a row @PLACEMENT other than\n"
         "strict: max(critical path, work / 2); ready all: the part of bubble all during which the task a worker\n"
         "ran next was ready (the runtime's or the machine's idle time, not the schedule's)\n\n",
         rounds, steps);
  printf(
      "| slots | m  | policy             | step ms | / 1f1b | / zbh1 | ndws / | bound ms | bound / 1f1b | efficiency | "
      "bubble s0 | bubble s1 | bubble all | ready all | 1F1B theory |\n");
  printf("|------:|---:|--------------------|--------:|-------:|-------:|-------:|---------:|-------------:|-----------"
         ":|----------:|----------:|-----------:|----------:|------------:|\n");
  paired *pr = malloc((size_t)(n_slots * n_m * n_pol) * sizeof *pr);
  int n_pr = 0, ndws_at = -1;
  if (!pr) {
    fprintf(stderr, "%s: out of memory\n", me);
    return 1;
  }
  /* a policy named again is labelled so; the references are the first */
  char label[MAX_LIST][40];
  int again[MAX_LIST];
  for (int p = 0; p < n_pol; p++) {
    again[p] = 0;
    for (int q = 0; q < p && !again[p]; q++) again[p] = strcmp(pols[q], pols[p]) == 0;
    snprintf(label[p], sizeof label[p], again[p] ? "%s (again)" : "%s", pols[p]);
    if (!again[p] && strcmp(pols[p], "ndws") == 0) ndws_at = p;
  }
  for (int si = 0; si < n_slots; si++)
    for (int mi = 0; mi < n_m; mi++) {
      int slots = slot_n[si], m = m_n[mi];
      nd_bench_row runs[MAX_LIST][ND_BENCH_MAX_ROUNDS], med[MAX_LIST];
      /* round r starts at policy r: no policy always runs first */
      for (int r = 0; r < rounds; r++)
        for (int j = 0; j < n_pol; j++) {
          int p = (j + r) % n_pol;
          if (run(pols[p], m, slots, steps, &runs[p][r])) {
            free(pr);
            return 1;
          }
        }
      /* before the medians, which reorder each row's runs */
      for (int p = 0; ndws_at >= 0 && rounds > 1 && p < n_pol; p++)
        if (p != ndws_at) {
          pr[n_pr++] = (paired){slots, m, label[p],
                                nd_bench_pair(runs[ndws_at], runs[p], rounds, offsetof(nd_bench_row, step_ms)),
                                nd_bench_pair(runs[ndws_at], runs[p], rounds, offsetof(nd_bench_row, work_ms))};
        }
      double ref_1f1b = 0, ref_zbh1 = 0, ref_ndws = 0;
      for (int p = 0; p < n_pol; p++) {
        med[p] = nd_bench_median(runs[p], rounds);
        if (again[p]) continue;
        if (strcmp(pols[p], "1f1b") == 0) ref_1f1b = med[p].step_ms;
        if (strcmp(pols[p], "zbh1") == 0) ref_zbh1 = med[p].step_ms;
        if (strcmp(pols[p], "ndws") == 0) ref_ndws = med[p].step_ms;
      }
      for (int p = 0; p < n_pol; p++) {
        const nd_bench_row *r = &med[p];
        /* the worker bound holds only where every order runs each task on the same worker */
        double bound = strcmp(spec_of(pols[p]).placement, "strict") ? r->bound_ms : r->worker_bound_ms;
        char by_1f1b[16], by_zbh1[16], ndws_by[16], bound_by_1f1b[16];
        printf("| %5d | %2d | %-18s | %7.1f | %6s | %6s | %6s | %8.1f | %12s | %10.3f | %9.3f | %9.3f | %10.3f | "
               "%9.3f | %11.3f |\n",
               slots, m, label[p], r->step_ms, ratio(by_1f1b, r->step_ms, ref_1f1b),
               ratio(by_zbh1, r->step_ms, ref_zbh1), ratio(ndws_by, ref_ndws, r->step_ms), bound,
               ratio(bound_by_1f1b, bound, ref_1f1b), bound / r->step_ms, r->bubble[0], r->bubble[1], r->bubble_all,
               r->ready_all, 1.0 / (m + 1.0));
      }
      fflush(stdout);
    }
  print_paired(pr, n_pr);
  free(pr);
  return 0;
}
