/* `ndgraph run`: the training loop on top of the public trainer API, with
 * its step lines, evaluation, checkpoints, metrics (JSON Lines) and traces. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"

#define PATH_TEXT 4200 /* a path key's value, with room to spare */

/* A key's value as text ("" when unknown). */
static const char *text(const nd_config *cfg, const char *key, char *buf, size_t size) {
  if (nd_config_get(cfg, key, buf, size)) buf[0] = '\0';
  return buf;
}

static long long num(const nd_config *cfg, const char *key) {
  char buf[32];
  return atoll(text(cfg, key, buf, sizeof buf));
}

static double mib(long long bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* A metrics file that could not be opened or written: ND_EIO, naming it. */
static int metrics_failed(const char *path, const char *verb, nd_error *err) {
  snprintf(err->msg, sizeof err->msg, "%s: cannot %s the metrics file: %s", path, verb,
           errno == ENXIO ? "a FIFO that nobody reads" : strerror(errno));
  return err->code = ND_EIO;
}

/* The metrics file, opened without waiting: a FIFO that nobody reads is an
 * error (ENXIO), not a run that hangs before its first step. */
static FILE *open_metrics(const char *path, int append) {
  int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) return NULL;
  FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, append ? "a" : "w") : NULL;
  if (!f) {
    int saved = errno;
    close(fd);
    errno = saved;
  }
  return f;
}

/* One line of the metrics file, flushed so that a crash loses none; a line
 * that did not reach the file is an error, not a gap in the user's data. */
static int log_json(FILE *f, const char *path, nd_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int log_json(FILE *f, const char *path, nd_error *err, const char *fmt, ...) {
  if (!f) return 0;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  return fflush(f) == 0 && !ferror(f) ? 0 : metrics_failed(path, "write", err);
}

/* Each process's submission of the last step, in process order, as the
 * metrics' three arrays (malloc'ed; NULL when out of memory). */
static char *submissions_json(const nd_trainer *tr, int procs) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f) return NULL;
  static const char *const keys[] = {"\"tasks_submitted\": [", "], \"submit_ms\": [", "], \"graph_tasks\": ["};
  for (int part = 0; part < 3; part++) {
    fputs(keys[part], f);
    for (int p = 0; p < procs; p++) {
      long long tasks = 0;
      double ms = 0;
      nd_trainer_submission(tr, p, &tasks, &ms);
      if (part == 1)
        fprintf(f, "%s%.3f", p ? ", " : "", ms);
      else
        fprintf(f, "%s%lld", p ? ", " : "", part ? nd_trainer_graph_tasks(tr, p) : tasks);
    }
  }
  fputc(']', f);
  if (fclose(f)) {
    free(out);
    return NULL;
  }
  return out;
}

/* parallelism.stage_layers: auto: the split nd_trainer_open chose and why. */
static void print_balance(const nd_trainer *tr) {
  nd_stage_info st;
  int p = 0;
  while (nd_trainer_stage(tr, p, &st) == 0) p++;
  if (!p) return;
  nd_trainer_stage(tr, 0, &st);
  if (st.layer_ms < 0) {
    printf("ndgraph: stage_layers auto: every stage on a %s worker, even split [", st.device);
  } else {
    printf("ndgraph: stage_layers auto: per layer");
    for (int s = 0; s < p && !nd_trainer_stage(tr, s, &st); s++)
      printf(" %s%.2f ms (stage %d, %s)", s ? "| " : "", st.layer_ms, s, st.device);
    printf("; other work");
    for (int s = 0; s < p && !nd_trainer_stage(tr, s, &st); s++) printf(" %.2f", st.other_ms);
    printf(" ms -> stage_layers [");
  }
  for (int s = 0; s < p && !nd_trainer_stage(tr, s, &st); s++) printf("%s%lld", s ? ", " : "", st.layers);
  printf("]");
  /* the balanced split lost to the CPU workers alone before it was built */
  double slowest = 0;
  int kept_even = 0;
  for (int s = 0; s < p && !nd_trainer_stage(tr, s, &st); s++) {
    double ms = st.other_ms + (double)st.balanced_layers * st.layer_ms;
    slowest = ms > slowest ? ms : slowest;
    kept_even |= st.balanced_layers != st.layers;
  }
  if (kept_even) {
    printf(" (the balanced split [");
    for (int s = 0; s < p && !nd_trainer_stage(tr, s, &st); s++) printf("%s%lld", s ? ", " : "", st.balanced_layers);
    printf("] leaves %.2f ms on its slowest stage, more than a whole step on the CPU workers alone, %.2f ms)", slowest,
           st.cpu_alone_ms);
  }
  printf("\n");
  fflush(stdout);
}

/* A mixed node's choice between its devices and the CPU workers alone,
 * before the first step: a user who sees a device idle learns why. */
static void print_device_trial(const nd_trainer *tr) {
  nd_device_trial t;
  if (nd_trainer_device_trial(tr, &t) || !t.decided) return;
  printf("ndgraph: devices or CPU workers alone: best step %.1f ms with all workers, %.1f ms with the CPU workers "
         "alone -> %s\n",
         t.all_ms, t.cpu_ms, t.kept_devices ? "all workers" : "the CPU workers alone (the devices stay idle)");
  fflush(stdout);
}

/* The header: the model, the layout, the devices (a line per GPU), the kernels plugins supply. */
static void print_header(const nd_config *cfg, const nd_trainer *tr) {
  char sched[64], arch[16];
  int count[ND_BACKEND_COUNT];
  nd_trainer_devices(tr, count);
  int llama = strcmp(text(cfg, "model.arch", arch, sizeof arch), "llama") == 0;
  char context[48] = ""; /* each sequence over several ranks */
  if (num(cfg, "parallelism.context_parallel_size") > 1)
    snprintf(context, sizeof context, " x context %lld", num(cfg, "parallelism.context_parallel_size"));
  printf("ndgraph: %s %lld layers, %lld heads, n_embd %lld, seq_len %lld, vocab %lld | data %lld x tensor %lld x "
         "pipeline %lld%s, %lld micro-batches of %lld | %d CPU workers (OpenBLAS %s), %d OpenCL devices, scheduler %s\n",
         llama ? "Llama" : "GPT-2", num(cfg, "model.n_layer"), num(cfg, "model.n_head"), num(cfg, "model.n_embd"),
         num(cfg, "model.seq_len"), num(cfg, "model.vocab_size"), num(cfg, "parallelism.data_parallel_size"),
         num(cfg, "parallelism.tensor_parallel_size"), num(cfg, "parallelism.pipeline_parallel_size"), context,
         num(cfg, "parallelism.micro_batches"), num(cfg, "train.micro_batch_size"), count[ND_BACKEND_CPU], nd_blas_core(),
         count[ND_BACKEND_OPENCL],
         text(cfg, "runtime.scheduler", sched, sizeof sched));
  /* a line per device its backend names: the GPUs */
  char gpu[256];
  for (int b = 0; b < ND_BACKEND_COUNT; b++)
    for (int g = 0; nd_trainer_device(tr, b, g, gpu, sizeof gpu) == 0; g++) printf("GPU %s\n", gpu);
  const char *kind, *name, *origin;
  int i = 0;
  for (; nd_trainer_plugin_kernel(tr, i, &kind, &name, &origin) == 0; i++)
    printf("%s%s=%s (%s)", i ? ", " : "kernels: ", kind, name, origin);
  if (i) putchar('\n');
  fflush(stdout);
}

/* Under mpirun, a line per process: where it runs and the ranks it owns. */
static void print_nodes(const nd_config *cfg, const nd_trainer *tr, int processes) {
  int pp = (int)num(cfg, "parallelism.pipeline_parallel_size"), tp = (int)num(cfg, "parallelism.tensor_parallel_size");
  nd_node_info n;
  for (int p = 0; processes > 1 && nd_trainer_node(tr, p, &n) == 0; p++) {
    char devices[128] = "";
    for (int i = 1, len = 0; i < ND_BACKEND_COUNT && len >= 0 && (size_t)len < sizeof devices; i++)
      len += snprintf(devices + len, sizeof devices - (size_t)len, ", %d %s", n.devices[nd_device_listed(i)],
                      nd_device_label(nd_device_listed(i)));
    printf("  process %d on %s: %d packages, %d NUMA nodes, %d cores, %d PUs | %d CPU workers%s | "
           "ranks d%dp%dt%d..d%dp%dt%d\n",
           p, n.host, n.packages, n.numa_nodes, n.cores, n.pus, n.devices[ND_BACKEND_CPU], devices,
           n.first_rank / (pp * tp), n.first_rank / tp % pp, n.first_rank % tp, n.last_rank / (pp * tp),
           n.last_rank / tp % pp, n.last_rank % tp);
  }
}

/* Paths that name one file: the same text, or the same inode (a relative
 * path and an absolute one). */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return strcmp(a, b) == 0 ||
         (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}

/* A resume that goes on with other data than its checkpoint's steps read:
 * allowed (a new data set to fine-tune on), but said. */
static void note_other_data(const nd_config *cfg, const nd_trainer *tr, const char *dir) {
  char data[PATH_TEXT];
  const char *before = nd_trainer_resumed_data(tr);
  text(cfg, "data.train", data, sizeof data);
  if (before[0] && !same_file(before, data))
    fprintf(stderr, "ndgraph: note: %s was trained on %s (its state.json); this run goes on with data.train %s\n", dir,
            before, data);
}

/* train.save_dir tidied and checked before the first step, not at the first
 * save; *need gets the bytes of one checkpoint. */
static int prepare_save_dir(nd_trainer *tr, const char *save_dir, long long *newest, double *need, nd_error *err) {
  nd_save_dir_check c;
  int rc = nd_trainer_check_save_dir(tr, &c, err);
  if (rc || !save_dir[0]) return rc;
  *newest = c.newest;
  *need = (double)c.need_bytes;
  if (c.removed || c.restored)
    printf("checkpoint: %s: removed %d temporary director%s of stopped runs, put back %d checkpoint%s\n", save_dir,
           c.removed, c.removed == 1 ? "y" : "ies", c.restored, c.restored == 1 ? "" : "s");
  if (c.free_bytes < c.need_bytes)
    fprintf(stderr, "ndgraph: warning: %s: %.1f MB free, one checkpoint needs about %.1f MB\n", save_dir,
            (double)c.free_bytes / 1e6, (double)c.need_bytes / 1e6);
  return 0;
}

/* The launcher's grace after SIGTERM, as process 0 reports it (the others: none). */
static nd_cli_grace grace;
/* process 0, which speaks for the job (a second SIGINT's line included) */
static int speaks;

/* nd_trainer_save, timed against that grace, and named to a second SIGINT. */
static int save(nd_trainer *tr, const char *save_dir, nd_error *err) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int rc = nd_trainer_save(tr, err);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (!rc)
    nd_cli_grace_check(grace, nd_trainer_steps_done(tr), (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
  if (!rc && speaks) nd_cli_signals_saved(save_dir, nd_trainer_steps_done(tr));
  return rc;
}

/* A signal between steps: a checkpoint of the steps done (unless save_dir is
 * empty or it is already written) and one line saying where. Returns the
 * exit status to stop with (130, 143, 129, 141), 0 to go on, or an error code. */
static int on_signal(nd_trainer *tr, int sig, const char *save_dir, long long *saved, nd_error *err) {
  const char *name = sig == SIGINT    ? "SIGINT"
                     : sig == SIGTERM ? "SIGTERM"
                     : sig == SIGHUP  ? "SIGHUP (the terminal closed)"
                     : sig == SIGPIPE ? "SIGPIPE (standard output closed)"
                                      : "SIGUSR1";
  long long step = nd_trainer_steps_done(tr);
  int rc;
  if (save_dir[0] && *saved != step) {
    if ((rc = save(tr, save_dir, err))) return rc;
    *saved = step;
  }
  /* with standard output gone, the line goes where it can still be read */
  FILE *out = sig == SIGPIPE ? stderr : stdout;
  if (save_dir[0])
    fprintf(out, "ndgraph: %s after step %lld: checkpoint %s/step-%lld", name, step, save_dir, step);
  else
    fprintf(out, "ndgraph: %s after step %lld: no checkpoint (train.save_dir is empty)", name, step);
  fprintf(out, "%s\n", sig == SIGUSR1 ? "; training goes on" : "; stopping");
  fflush(out);
  return sig == SIGUSR1 ? 0 : 128 + sig;
}

/* --resume: the checkpoint loaded, said on the step lines' output. */
static int resume_from(nd_trainer *tr, const nd_config *cfg, const char *resume, int speaks, nd_error *err) {
  char dir[PATH_TEXT];
  int with_state, rc = nd_trainer_resume(tr, resume, dir, sizeof dir, &with_state, err);
  if (rc) return rc;
  if (nd_trainer_resume_note(tr)[0]) printf("%s\n", nd_trainer_resume_note(tr));
  if (with_state) {
    printf("resumed from %s at step %lld\n", dir, nd_trainer_steps_done(tr));
    fflush(stdout);
    if (speaks) note_other_data(cfg, tr, dir);
  } else {
    printf("initialized from the weights of %s (no optimizer state: training starts at step 0)\n", dir);
  }
  return 0;
}

/* The most ids of the data that prompt train.sample_every's samples: enough
 * to set a context, few enough to leave most positions to the sample. */
#define SAMPLE_PROMPT 16

/* train.sample_every: the prompt (the first ids of the validation data),
 * read once before the first step and shown once. */
typedef struct sample {
  long long every;
  int *prompt, n_prompt;
  nd_cli_text out; /* through data.tokenizer where there is one */
  nd_generate_opts greedy;
  nd_generator *gen; /* opened at the first sample, closed with the run */
} sample;

static int sample_open(nd_trainer *tr, const nd_config *cfg, sample *s, nd_error *err) {
  char data[PATH_TEXT];
  long long tokens = num(cfg, "train.sample_tokens"), room = num(cfg, "model.seq_len") - tokens;
  s->every = num(cfg, "train.sample_every");
  if (!s->every) return 0;
  s->n_prompt = room < SAMPLE_PROMPT ? (int)room : SAMPLE_PROMPT;
  int rc = nd_cli_text_open(&s->out, cfg, NULL, err);
  if (rc) return rc;
  s->greedy = (nd_generate_opts){.tokens = (int)tokens, .temperature = 0.0};
  if (!(s->prompt = malloc((size_t)s->n_prompt * sizeof *s->prompt))) {
    snprintf(err->msg, sizeof err->msg, "train.sample_every: out of memory");
    return err->code = ND_ENOMEM;
  }
  if ((rc = nd_trainer_data_prefix(tr, s->prompt, s->n_prompt, err))) return rc;
  if (!text(cfg, "data.val", data, sizeof data)[0]) text(cfg, "data.train", data, sizeof data);
  printf("sample: every %lld steps, %lld greedy ids after the first %d of %s: ", s->every, tokens, s->n_prompt, data);
  nd_cli_text_put(&s->out, s->prompt, s->n_prompt);
  nd_cli_text_end(&s->out);
  return 0;
}

/* After the step's lines: its time and tokens/s are measured without it. */
static int sample_step(nd_trainer *tr, sample *s, long long step, nd_error *err) {
  nd_generate_result res;
  if (!s->every || step % s->every) return 0;
  printf("step %5lld | sample: ", step);
  return nd_cli_sample(tr, &s->gen, s->prompt, s->n_prompt, &s->greedy, &s->out, &res, err);
}

/* The loop: steps up to train.steps, each logged, evaluated and saved as the
 * configuration asks. A positive return is the exit status a signal asked for. */
static int train(const nd_config *cfg, const char *metrics_path, const char *resume, nd_error *err) {
  char trace_cfg[PATH_TEXT], svg[PATH_TEXT], metrics_cfg[PATH_TEXT], val[PATH_TEXT], save_dir[PATH_TEXT];
  nd_trainer *tr = NULL;
  FILE *metrics = NULL;
  const char *trace_path = text(cfg, "trace.path", trace_cfg, sizeof trace_cfg);
  if (!metrics_path) metrics_path = text(cfg, "log.metrics", metrics_cfg, sizeof metrics_cfg);
  text(cfg, "trace.svg", svg, sizeof svg);
  text(cfg, "data.val", val, sizeof val);
  text(cfg, "train.save_dir", save_dir, sizeof save_dir);
  long long every = num(cfg, "log.every"), eval_every = num(cfg, "train.eval_every");
  long long eval_batches = num(cfg, "train.eval_batches"), save_every = num(cfg, "train.save_every");
  long long saved = -1; /* the step of the newest checkpoint */
  sample samples = {0};
  /* held since main() began (cli/main.c) */
  int rc = nd_trainer_open(&tr, cfg, err);
  /* a signal that came while the program and the runtime started was held and arrives now */
  nd_cli_signals_catch();
  if (rc) return rc;
  nd_process_info procs;
  nd_trainer_processes(tr, &procs);
  /* every process records the traced steps (process 0 gathers them) */
  int tracing = trace_path[0] || svg[0];
  /* under mpirun, process 0 speaks for the job: step lines, metrics, the trace's files */
  if (procs.process != 0) {
    metrics_path = trace_path = "";
    svg[0] = '\0';
    if (!freopen("/dev/null", "w", stdout))
      fprintf(stderr, "ndgraph: note: process %d could not silence its standard output\n", procs.process);
  }
  print_balance(tr);
  /* under mpirun a step of the start may fail on one process only (process
   * 0's files, a --resume only one was given): all agree on the start before
   * the first step, which waits on every process, and compare their data
   * and checkpoint */
  /* the save directory is process 0's (under mpirun the others only gather) */
  /* the newest checkpoint of an earlier run in save_dir, for a note once a step has run */
  long long earlier = 0;
  double need = 0;
  if (procs.process == 0) rc = prepare_save_dir(tr, save_dir, &earlier, &need, err);
  speaks = procs.process == 0;
  if (speaks) nd_cli_signals_saved(save_dir, earlier);
  grace = procs.process == 0 && save_dir[0] ? nd_cli_stop_grace() : (nd_cli_grace){0};
  if (resume) earlier = 0;
  /* a trace that cannot be written is found now, not at the traced step */
  if (!rc && trace_path[0]) rc = nd_check_writable(trace_path, err);
  if (!rc && svg[0]) rc = nd_check_writable(svg, err);
  /* the schedule measured before the first step, and before a resume loads over the steps it ran */
  if ((rc = nd_trainer_agree(tr, rc, err)) || (rc = nd_trainer_tune(tr, err))) goto done;
  /* under mpirun, process 0 speaks for the job (its standard output alone is kept) */
  if (resume) rc = resume_from(tr, cfg, resume, procs.process == 0, err);
  if (!rc && metrics_path[0] && !(metrics = open_metrics(metrics_path, resume != NULL)))
    rc = metrics_failed(metrics_path, "open", err);
  if ((rc = nd_trainer_agree(tr, rc, err)) || (rc = nd_trainer_check_shared(tr, err))) goto done;
  print_header(cfg, tr);
  if (procs.processes > 1)
    printf("mpirun: %d processes; process 0 builds %lld tasks and submits %lld of the step's %lld\n",
           procs.processes, procs.tasks_built, procs.tasks_submitted, procs.tasks);
  print_nodes(cfg, tr, procs.processes);
  nd_cli_grace_note(grace, need);
  print_device_trial(tr);
  if ((rc = sample_open(tr, cfg, &samples, err))) goto done;
  long long last = num(cfg, "train.steps"), first = nd_trainer_steps_done(tr) + 1;
  while (nd_trainer_steps_done(tr) < last) {
    nd_step_result r;
    long long step = nd_trainer_steps_done(tr) + 1;
    int tasks;
    if (tracing && nd_trace_wanted(cfg, first, last, step)) {
      /* a step that ran, its files not written (ND_EIO): only the trace is lost */
      if ((rc = nd_trainer_step_traced(tr, trace_path, svg, &r, &tasks, err))) {
        if (rc == ND_EIO || (rc == ND_EDATA && procs.processes == 1)) goto save_and_stop;
        goto done;
      }
      printf("trace: step %lld, %d tasks -> %s%s%s\n", step, tasks, trace_path, trace_path[0] && svg[0] ? ", " : "",
             svg);
    } else if ((rc = nd_trainer_step(tr, &r, err))) {
      /* data that changed under the run: the step was not applied, the steps
       * before it are kept (in one process: under mpirun the other processes
       * applied their part of the step) */
      if (rc == ND_EDATA && procs.processes == 1) goto save_and_stop;
      goto done;
    }
    if (earlier) {
      /* a fresh run among an earlier run's checkpoints: theirs stay, but mixed */
      fprintf(stderr,
              "ndgraph: note: %s already holds checkpoints up to step-%lld: this run replaces those of the steps it "
              "saves, and --resume %s would continue from the newest\n",
              save_dir, earlier, save_dir);
      earlier = 0;
    }
    if (r.step == 1 || r.step % every == 0 || r.step == last) {
      printf("step %5lld | loss %.4f | lr %.3e | %8.1f ms | %8.0f tokens/s | %6.2f GFLOP/s\n", r.step, r.loss, r.lr,
             r.step_ms, r.tokens_per_s, r.gflops);
      fflush(stdout);
      /* process 0 writes it: every process learns whether it could */
      nd_memory_use mem;
      nd_trainer_memory(tr, &mem);
      char *subs = metrics ? submissions_json(tr, procs.processes) : NULL;
      rc = metrics && !subs ? metrics_failed(metrics_path, "write", err)
                            : log_json(metrics, metrics_path, err,
                                       "{\"step\": %lld, \"loss\": %.17g, \"lr\": %.9g, \"grad_norm\": %.9g, "
                                       "\"step_ms\": %.3f, \"tokens_per_s\": %.1f, \"gflops\": %.3f, "
                                       "\"rss_peak_bytes\": %lld, \"tensor_bytes\": %lld, "
                                       "\"rank_tensor_bytes_peak\": %lld, \"device_tensor_bytes_peak\": %lld, %s}",
                                       r.step, r.loss, r.lr, r.grad_norm, r.step_ms, r.tokens_per_s, r.gflops,
                                       mem.rss_peak, mem.tensors, mem.rank_peak, mem.device_peak, subs);
      free(subs);
      if ((rc = nd_trainer_agree(tr, rc, err))) goto save_and_stop;
    }
    if (val[0] && eval_every && (r.step % eval_every == 0 || r.step == last)) {
      double loss;
      long long tokens;
      if ((rc = nd_trainer_eval(tr, NULL, eval_batches, &loss, &tokens, err))) {
        if (rc == ND_EDATA) goto save_and_stop;
        goto done;
      }
      printf("step %5lld | val_loss %.4f (%lld tokens)\n", r.step, loss, tokens);
      fflush(stdout);
      rc = log_json(metrics, metrics_path, err, "{\"step\": %lld, \"val_loss\": %.17g, \"tokens\": %lld}", r.step, loss,
                    tokens);
      if ((rc = nd_trainer_agree(tr, rc, err))) goto save_and_stop;
    }
    if ((rc = sample_step(tr, &samples, r.step, err))) goto done;
    if (save_dir[0] && ((save_every && r.step % save_every == 0) || r.step == last)) {
      if ((rc = save(tr, save_dir, err))) goto done;
      saved = r.step;
      printf("step %5lld | checkpoint %s/step-%lld\n", r.step, save_dir, r.step);
    }
    /* under mpirun all processes act on the same signal after the same step */
    int sig = nd_trainer_agree_signal(tr, nd_cli_signal_take());
    if (sig && (rc = on_signal(tr, sig, save_dir, &saved, err))) goto done;
  }
  if (first > last) printf("nothing to do: the checkpoint is at step %lld, train.steps is %lld\n", first - 1, last);
  /* a stop asked for during the last step */
  int sig = nd_trainer_agree_signal(tr, nd_cli_signal_take());
  if (sig && sig != SIGUSR1) rc = on_signal(tr, sig, save_dir, &saved, err);
  if (!rc) {
    /* the metrics file's last bytes on disk, or its failure every process's */
    int closed = metrics ? fclose(metrics) : 0;
    metrics = NULL;
    rc = nd_trainer_agree(tr, closed ? metrics_failed(metrics_path, "write", err) : 0, err);
  }
  if (!rc && first <= last) {
    nd_memory_use mem;
    nd_trainer_memory(tr, &mem);
    printf("memory: peak RSS %.1f MiB | tensors %.1f MiB in main memory, %.1f MiB on rank %d (the most) | devices "
           "%.1f MiB at peak\n",
           mib(mem.rss_peak), mib(mem.tensors), mib(mem.rank_peak), mem.rank_of_peak, mib(mem.device_peak));
  }
  if (!rc && procs.processes > 1 && !nd_trainer_processes(tr, &procs)) {
    printf("mpirun: StarPU-MPI sent %lld bytes for the steps, the plan predicts %lld", procs.bytes_sent,
           procs.bytes_predicted);
    if (procs.bytes_checkpoints) printf("; and %lld gathering checkpoints", procs.bytes_checkpoints);
    putchar('\n');
    printf("mpirun: the last step's submission, per process:");
    for (int p = 0; p < procs.processes; p++) {
      long long tasks = 0;
      double ms = 0;
      nd_trainer_submission(tr, p, &tasks, &ms);
      printf("%s %lld tasks in %.3f ms", p ? "," : "", tasks, ms);
    }
    putchar('\n');
  }
  goto done;
save_and_stop:
  /* the metrics, the trace or the data's rest are lost, the steps done need
   * not be (none when this run has done none) */
  if (save_dir[0] && saved != nd_trainer_steps_done(tr) && nd_trainer_steps_done(tr) >= first &&
      nd_trainer_save(tr, &(nd_error){0}) == 0)
    printf("step %5lld | checkpoint %s/step-%lld, before stopping\n", nd_trainer_steps_done(tr), save_dir,
           nd_trainer_steps_done(tr));
done:
  if (metrics && fclose(metrics) != 0 && !rc) rc = metrics_failed(metrics_path, "write", err);
  nd_generator_close(samples.gen);
  nd_cli_text_close(&samples.out);
  free(samples.prompt);
  nd_trainer_close(tr);
  return rc;
}

int nd_cli_run(int argc, char **argv) {
  nd_cli_option opts[] = {{"--metrics", ND_CLI_VALUE_OR_EMPTY, NULL},
                          {"--resume", ND_CLI_VALUE, NULL},
                          {"--trace", ND_CLI_VALUE_OR_EMPTY, NULL},
                          {"--calibration", ND_CLI_VALUE, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 4, &cfg);
  if (status) return status;
  nd_error err = {0};
  char plan_auto[8] = "";
  nd_config_get(cfg, "parallelism.auto", plan_auto, sizeof plan_auto);
  int automatic = strcmp(plan_auto, "true") == 0;
  /* a calibration the run would not read: said, not ignored */
  if (opts[3].value && !automatic) {
    fprintf(stderr, "ndgraph: --calibration %s: only parallelism.auto: true reads it\n", opts[3].value);
    nd_config_free(cfg);
    return ND_EXIT_BAD_INPUT;
  }
  /* under mpirun, a layout that cuts across the launch's processes */
  int process, processes = nd_launched_processes(&process);
  /* the generator runs the whole model in one process: under mpirun the
   * parameters are spread over the processes (docs/generate.md) */
  if (processes > 1 && num(cfg, "train.sample_every")) {
    fprintf(stderr,
            "ndgraph: train.sample_every: samples run in one process; under mpirun (%d processes) set it to 0\n",
            processes);
    nd_config_free(cfg);
    return ND_EXIT_BAD_INPUT;
  }
  int rc = automatic ? nd_plan_auto_apply(cfg, opts[3].value, processes, stdout, &err) : 0;
  /* --trace is trace.path: under mpirun a traced run builds the whole step (docs/nodes.md) */
  if (!rc && opts[2].value) rc = nd_config_set(cfg, "trace.path", opts[2].value, &err);
  if (!rc) rc = train(cfg, opts[0].value, opts[1].value, &err);
  nd_config_free(cfg);
  if (rc > 0) return rc; /* the exit status a signal asked for */
  return rc ? nd_cli_fail(rc, &err) : 0;
}
