/* `ndgraph run`: the training loop with logging, evaluation and checkpoints. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "configs/config.h"
#include "kernels/registry.h"
#include "tasks/exec.h"
#include "trace/recorder.h"
#include "train/trainer_internal.h"

static void log_json(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_json(FILE *f, const char *fmt, ...) {
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fflush(f);
}

/* A step-N directory, or a save_dir whose newest step-N is meant. */
static int resolve_resume(const char *dir, char *out, size_t size, nd_error *err) {
  char probe[ND_PATH_MAX + 32];
  struct stat st;
  snprintf(probe, sizeof probe, "%s/model.safetensors", dir);
  if (stat(probe, &st) == 0) {
    snprintf(out, size, "%s", dir);
    return 0;
  }
  return nd_checkpoint_latest(dir, out, size, err);
}

/* One step with its tasks recorded, then the trace files rewritten with
 * every traced step so far (so a later crash keeps what was done). */
static int traced_step(nd_trainer *tr, nd_trace_recorder *rec, const char *json, const char *svg, nd_step_result *r,
                       nd_error *err) {
  nd_exec *ex = nd__trainer_exec(tr);
  long long step = nd_trainer_steps_done(tr) + 1;
  int rc = nd_trace_begin(rec, ex, step, err);
  if (!rc) rc = nd_trainer_step(tr, r, err);
  int end = nd_trace_end(rec, ex, rc ? NULL : err);
  if (rc || (rc = end) || (rc = nd_trace_save(rec, json, svg, err))) return rc;
  printf("trace: step %lld, %d tasks -> %s%s%s\n", step, (int)nd_trace_recorded(rec), json[0] ? json : "",
         json[0] && svg[0] ? ", " : "", svg);
  return 0;
}

int nd_run(const nd_config *cfg, const nd_run_options *opts, nd_error *err) {
  nd_trainer *tr = NULL;
  FILE *metrics = NULL;
  nd_trace_recorder *rec = NULL;
  const char *trace_path = opts && opts->trace ? opts->trace : cfg->trace.path;
  const char *metrics_path = opts && opts->metrics ? opts->metrics : cfg->log.metrics;
  int rc = nd_trainer_open(&tr, cfg, err);
  if (rc) return rc;
  if (opts && opts->resume) {
    char dir[ND_PATH_MAX + 64], probe[ND_PATH_MAX + 96];
    struct stat st;
    if ((rc = resolve_resume(opts->resume, dir, sizeof dir, err))) goto done;
    /* weights alone (a Hugging Face GPT-2 checkpoint, say) start a fine-tuning
     * run at step 0 with fresh optimizer state */
    snprintf(probe, sizeof probe, "%s/optimizer.safetensors", dir);
    int with_state = stat(probe, &st) == 0;
    if ((rc = nd_trainer_load(tr, dir, with_state, err))) goto done;
    if (with_state) printf("resumed from %s at step %lld\n", dir, nd_trainer_steps_done(tr));
    else printf("initialized from the weights of %s (no optimizer state: training starts at step 0)\n", dir);
  }
  if (metrics_path && metrics_path[0] && !(metrics = fopen(metrics_path, opts && opts->resume ? "a" : "w"))) {
    rc = nd__fail(err, ND_EIO, "%s: cannot open the metrics file", metrics_path);
    goto done;
  }
  printf("ndgraph: GPT-2 %lld layers, %lld heads, n_embd %lld, seq_len %lld, vocab %lld | data %lld x tensor %lld x "
         "pipeline %lld, %lld micro-batches of %lld | %d CPU workers, %d OpenCL devices, scheduler %s\n",
         (long long)cfg->model.n_layer, (long long)cfg->model.n_head, (long long)cfg->model.n_embd,
         (long long)cfg->model.seq_len, (long long)cfg->model.vocab_size,
         (long long)cfg->parallelism.data_parallel_size, (long long)cfg->parallelism.tensor_parallel_size,
         (long long)cfg->parallelism.pipeline_parallel_size, (long long)cfg->parallelism.micro_batches,
         (long long)cfg->train.micro_batch_size, nd_runtime_workers(), nd_runtime_opencl_devices(),
         cfg->runtime.scheduler);
  nd__kernels_line(nd__trainer_kernels(tr), stdout);
  fflush(stdout);
  long long last = cfg->train.steps, first = nd_trainer_steps_done(tr) + 1;
  if ((trace_path[0] || cfg->trace.svg[0]) &&
      (rc = nd_trace_recorder_new(&rec, nd__trainer_graph(tr), cfg->trace.flows, err)))
    goto done;
  while (nd_trainer_steps_done(tr) < last) {
    nd_step_result r;
    int traced = rec && nd_trace_wanted(cfg, first, last, nd_trainer_steps_done(tr) + 1);
    if ((rc = traced ? traced_step(tr, rec, trace_path, cfg->trace.svg, &r, err) : nd_trainer_step(tr, &r, err)))
      goto done;
    if (r.step == 1 || r.step % cfg->log.every == 0 || r.step == last) {
      printf("step %5lld | loss %.4f | lr %.3e | %8.1f ms | %8.0f tokens/s | %6.2f GFLOP/s\n", r.step, r.loss, r.lr,
             r.step_ms, r.tokens_per_s, r.gflops);
      fflush(stdout);
      log_json(metrics, "{\"step\": %lld, \"loss\": %.17g, \"lr\": %.9g, \"grad_norm\": %.9g, \"step_ms\": %.3f, "
               "\"tokens_per_s\": %.1f, \"gflops\": %.3f}",
               r.step, r.loss, r.lr, r.grad_norm, r.step_ms, r.tokens_per_s, r.gflops);
    }
    if (cfg->data.val[0] && cfg->train.eval_every && (r.step % cfg->train.eval_every == 0 || r.step == last)) {
      double val;
      long long tokens;
      if ((rc = nd_trainer_eval(tr, NULL, cfg->train.eval_batches, &val, &tokens, err))) goto done;
      printf("step %5lld | val_loss %.4f (%lld tokens)\n", r.step, val, tokens);
      fflush(stdout);
      log_json(metrics, "{\"step\": %lld, \"val_loss\": %.17g, \"tokens\": %lld}", r.step, val, tokens);
    }
    if (cfg->train.save_dir[0] && ((cfg->train.save_every && r.step % cfg->train.save_every == 0) || r.step == last)) {
      if ((rc = nd_trainer_save(tr, err))) goto done;
      printf("step %5lld | checkpoint %s/step-%lld\n", r.step, cfg->train.save_dir, r.step);
    }
  }
done:
  if (metrics) fclose(metrics);
  nd_trace_recorder_free(rec);
  nd_trainer_close(tr);
  return rc;
}
