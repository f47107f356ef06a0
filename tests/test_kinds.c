/* The task-kind table (graph/kinds.c) is whole and matches what reads it:
 * every kind has a row with a name, a cost and at most ND_KIND_MAX_BUFFERS
 * buffers; names are unique and round-trip; every kind runs on the CPU
 * backend and every replaceable kind has a built-in CPU kernel, which passes
 * kernel-check against the kind's double-precision reference; every backend
 * compiled in implements or explicitly declines every kind; the graph of a
 * layout with every kind follows the rows; the simulator's built-in
 * estimates run on the CPU what the OpenCL backend declines; and
 * docs/kernels.md lists each row as nd_kind_describe prints it. */
#include <stdio.h>
#include <string.h>

#include "common/device.h"
#include "graph/kinds.h"
#include "kernels/backend.h"
#include "kernels/registry.h"
#include "sim/calibration.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

int main(void) {
  int named = 1, sized = 1, round = 1, cpu = 1, kernel = 1;
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    const nd_kind_row *row = nd_kind((enum nd_task_kind)k);
    named &= row->name != NULL && row->flops != NULL;
    if (!row->name) continue;
    sized &= row->n_buffers > 0 && row->n_buffers <= ND_KIND_MAX_BUFFERS;
    round &= nd_task_kind_from_name(row->name) == k;
    const nd_backend_ops *ops = nd__backend(ND_BACKEND_CPU);
    cpu &= ops->impl[k] != NULL || ops->kernel[k] != NULL;
    if (row->replaceable) kernel &= ops->kernel[k] != NULL;
  }
  ok(named, "every kind has a row with a name and a cost function");
  ok(sized, "every row has 1 to %d buffers", ND_KIND_MAX_BUFFERS);
  ok(round, "kind names are unique and nd_task_kind_from_name finds each");
  ok(cpu, "the CPU backend implements every kind");
  ok(kernel, "every replaceable kind has a built-in CPU kernel in the plugin signature");

  /* every backend compiled in (a device backend's table is there without its
   * device) implements or declines each kind, with a reason, never both: a
   * new kind that a backend neither runs nor declines was forgotten there */
  for (int b = 0; b < ND_BACKEND_COUNT; b++) {
    const nd_backend_ops *ops = nd__backend(b);
    if (!ops) {
      skip("the %s backend implements or declines every kind: not compiled in", nd_device_name(b));
      continue;
    }
    char forgotten[1024] = "", both[1024] = "";
    for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
      const char *name = nd_kind((enum nd_task_kind)k)->name, *why = ops->declined[k];
      if (!name) continue; /* no row: the first case fails */
      int runs = ops->impl[k] || ops->kernel[k], declines = why && why[0];
      char *list = runs && why ? both : !runs && !declines ? forgotten : NULL;
      if (list) snprintf(list + strlen(list), sizeof forgotten - strlen(list), " %s", name);
      if (declines && !runs) diag("%s declines %s: %s", nd_device_name(b), name, why);
    }
    ok(!forgotten[0] && !both[0], "the %s backend implements or declines each of the %d kinds%s%s%s%s", nd_device_name(b),
       ND_TASK_KIND_COUNT, forgotten[0] ? "; neither implemented nor declined with a reason:" : "", forgotten,
       both[0] ? "; both implemented and declined:" : "", both);
  }

  /* kernel-check's double-precision references: one for every replaceable
   * kind but the activations, and the built-in CPU kernels meet them */
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    const nd_kind_row *row = nd_kind((enum nd_task_kind)k);
    if (!row->name || !row->replaceable || row->activation) continue;
    nd__kernel_impl builtin = {.name = "builtin", .origin = "builtin"};
    builtin.fn[ND_BACKEND_CPU] = nd__backend(ND_BACKEND_CPU)->kernel[k];
    char log[4096] = "";
    FILE *out = fmemopen(log, sizeof log - 1, "w");
    nd_error cerr = {0};
    int rc = nd__kernel_check((enum nd_task_kind)k, &builtin, 0, out, &cerr); /* ND_EINVAL without a reference */
    if (out) fclose(out);
    ok(rc == 0, "kernel-check of the built-in %s against its fp64 reference%s%s", row->name, rc ? ":\n" : "",
       rc ? (cerr.msg[0] ? cerr.msg : log) : "");
  }

  /* a layout with every parallelism: nd_graph_build fails when an emitter leaves its row's order */
  const char *const every[] = {"parallelism.data_parallel_size=2", "parallelism.tensor_parallel_size=2",
                               "parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=2",
                               "parallelism.context_parallel_size=2", NULL};
  /* param_gather: GPT-2 with its blocks' weights sharded */
  const char *const zero3[] = {"parallelism.data_parallel_size=2", "parallelism.pipeline_parallel_size=2",
                               "parallelism.data_parallel_shard=parameters", NULL};
  /* GPT-2 and Llama between them use every kind (Llama in bf16: the weights' casts) */
  const char *const llama[] = {"parallelism.data_parallel_size=2",
                               "parallelism.tensor_parallel_size=2",
                               "parallelism.pipeline_parallel_size=2",
                               "parallelism.micro_batches=2",
                               "model.arch=llama",
                               "model.n_kv_head=2",
                               "train.precision=bf16",
                               /* shard_gather, reduce_scatter, grad_sumsq_range */
                               "parallelism.data_parallel_shard=gradients",
                               NULL};
  /* Llama's ring kinds (RoPE at the chunks' positions replaces rope_fwd there) */
  const char *const llama_cp[] = {"parallelism.data_parallel_size=2",
                                  "parallelism.tensor_parallel_size=2",
                                  "parallelism.pipeline_parallel_size=2",
                                  "parallelism.micro_batches=2",
                                  "model.arch=llama",
                                  "model.n_kv_head=2",
                                  "parallelism.context_parallel_size=2",
                                  NULL};
  int seen[ND_TASK_KIND_COUNT] = {0}, in_step[ND_TASK_KIND_COUNT] = {0}, follow = 1, rc = 0;
  nd_error err = {0};
  const char *const *const layouts[] = {every, llama, zero3, llama_cp};
  for (int arch = 0; arch < 4; arch++) {
    nd_config *cfg = tiny_config(layouts[arch]);
    nd_graph *g = NULL;
    /* the training step, and generation's graph of 2 tokens (its own kinds) */
    for (int gen = 0; gen < 2; gen++) {
      int r = !cfg ? -1 : gen ? nd_graph_build_generate(&g, cfg, 2, &err) : nd_graph_build(&g, cfg, 0, &err);
      rc = rc ? rc : r;
      for (int32_t i = 0; g && i < g->n_tasks; i++) {
        seen[g->tasks[i].kind] = 1;
        in_step[g->tasks[i].kind] |= !gen;
        follow &= nd_kind_check_access(&g->tasks[i], nd_task_access(g, &g->tasks[i]), g->tasks[i].n_access);
      }
      nd_graph_free(g);
      g = NULL;
    }
    nd_config_free(cfg);
  }
  char unseen[1024] = "";
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    const char *name = nd_kind((enum nd_task_kind)k)->name;
    if (!seen[k]) snprintf(unseen + strlen(unseen), sizeof unseen - strlen(unseen), " %s", name ? name : "(no row)");
  }
  ok(rc == 0 && !unseen[0] && follow,
     "dp 2 x tp 2 x pp 2 graphs of GPT-2 (cp 2) and Llama (cp 1 and 2) (and their generation graphs) have every kind, each task's buffers in its row's order%s%s%s%s",
     rc ? ": " : "", rc ? err.msg : "", unseen[0] ? "; no task of:" : "", unseen);

  /* The simulator's built-in estimates (sim/calibration.c) put on the CPU
   * workers the kinds of a training step that the OpenCL backend declines, and
   * the all-reduce; the simulator may not read the backend's table (it sees no
   * kernels/, and the table is compiled only with OpenCL), so its list is its
   * own, kept equal to the table here: a kind the backend starts or stops
   * declining must change both. */
  const nd_backend_ops *ocl = nd__backend(ND_BACKEND_OPENCL);
  if (ocl) {
    nd_calibration cal;
    nd_calibration_default(&cal);
    char differ[1024] = "";
    for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
      if (!in_step[k]) continue; /* generation's kinds: the simulator never sees them */
      int host = !cal.model.fit[k][ND_BACKEND_OPENCL].valid;
      int want = (ocl->declined[k] && !ocl->impl[k] && !ocl->kernel[k]) || k == ND_TASK_ALLREDUCE;
      if (host != want)
        snprintf(differ + strlen(differ), sizeof differ - strlen(differ), " %s (%s)",
                 nd_kind((enum nd_task_kind)k)->name,
                 host ? "host-only in the simulator, run by OpenCL" : "declined by OpenCL, on devices in the simulator");
    }
    ok(!differ[0],
       "the simulator's built-in estimates leave to the CPU exactly what the OpenCL backend declines, and the "
       "all-reduce%s%s",
       differ[0] ? ":" : "", differ);
  } else
    skip("the simulator's host-only kinds are the OpenCL backend's declined ones: OpenCL not compiled in");

  /* the documentation's table */
  char path[1100], line[512], doc[16384] = "";
  const char *src = getenv("ND_SRCDIR");
  snprintf(path, sizeof path, "%s/docs/kernels.md", src ? src : ".");
  FILE *f = fopen(path, "r");
  size_t len = 0;
  int in = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "<!-- kinds:", 11) == 0)
      in = strncmp(line, "<!-- kinds:begin", 16) == 0;
    else if (in && len + strlen(line) < sizeof doc)
      len += (size_t)snprintf(doc + len, sizeof doc - len, "%s", line);
  }
  if (f) fclose(f);
  char want[16384] = "";
  len = (size_t)snprintf(want, sizeof want, "```\n");
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    nd_kind_describe((enum nd_task_kind)k, line, sizeof line);
    len += (size_t)snprintf(want + len, sizeof want - len, "%s\n", line);
  }
  snprintf(want + len, sizeof want - len, "```\n");
  if (!ok(strcmp(doc, want) == 0, "docs/kernels.md lists every kind's buffers as graph/kinds.c declares them")) {
    diag("expected between <!-- kinds:begin --> and <!-- kinds:end -->:");
    for (char *p = strtok(want, "\n"); p; p = strtok(NULL, "\n")) diag("%s", p);
  }
  return done_testing();
}
