/* The trainer: datasets, the step's graph on StarPU, parameter
 * initialization, the learning-rate schedule and evaluation; checkpoints are
 * written and read by checkpoint/model.c on the tensors the trainer lists. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/model.h"
#include "common/error.h"
#include "common/topology.h"
#include "configs/config.h"
#include "data/dataset.h"
#include "graph/ir.h"
#include "graph/plan.h"
#include "graph/shard.h"
#include "kernels/registry.h"
#include "scheduler/policies.h"
#include "tasks/exec.h"
#include "tasks/mpi.h"
#include "tasks/schedule.h"
#include "train/init.h"
#include "train/trainer_internal.h"

struct nd_trainer {
  nd_config cfg;
  nd_dataset *train, *val;
  nd_graph *step_graph, *eval_graph;
  int eval_index;
  nd_exec *exec;
  int runtime_started;
  nd_kernels *kernels;     /* this trainer's: its tasks carry it */
  nd_device_trial decided; /* the tuning pass's choice between devices and CPU workers (train/tune.c) */
  int64_t steps_done;
  int64_t model_flops;   /* of one step */
  int64_t seqs_per_step; /* dp * micro_batches * micro_batch_size */
  /* the model's whole tensors: Hugging Face name, shape, element count */
  int n_hf;
  nd_ckpt_tensor *ckpt;           /* [n_hf] */
  nd_ckpt_rows wpe_extra;         /* GPT-2's positions past model.seq_len of a loaded checkpoint */
  nd_balance balance;             /* stage_layers: auto */
  nd_trace_recorder *rec;         /* the steps traced so far */
  int64_t steps_run;              /* training steps this trainer ran (not resumed): the bytes predicted */
  nd__submission *submissions;    /* [processes]: each one's submission of the last step (nd_trainer_submission) */
  int64_t checkpoint_bytes;       /* sent by StarPU-MPI gathering checkpoints, which no prediction holds */
  char resume_note[ND_ERROR_MAX]; /* why resuming skipped a newer checkpoint */
  char resumed[ND_PATH_MAX];      /* the checkpoint directory loaded ("" none) */
  int data_agreed;                /* every process opened the data sets (nd_trainer_step) */
  int save_lock;                  /* the lock on train.save_dir, -1 when not held */
  char resumed_data[ND_PATH_MAX]; /* the data.train of the checkpoint loaded with its state */
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Warm-up, then cosine decay to a tenth of the peak. */
static double learning_rate(const nd_config *cfg, int64_t step) {
  double lr = cfg->train.lr, warm = (double)cfg->train.warmup_steps;
  if (step < cfg->train.warmup_steps) return lr * (double)(step + 1) / warm;
  double span = (double)(cfg->train.steps - cfg->train.warmup_steps);
  double progress = span > 0 ? (double)(step - cfg->train.warmup_steps) / span : 1.0;
  if (progress > 1.0) progress = 1.0;
  double min_lr = lr * 0.1;
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + cos(M_PI * progress));
}

/* The model's whole tensors with their Hugging Face names, in the order
 * checkpoints list them. */
static int collect_names(nd_trainer *tr) {
  const nd_graph *g = tr->step_graph;
  tr->ckpt = calloc((size_t)g->n_tensors, sizeof *tr->ckpt);
  if (!tr->ckpt) return ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    if (t->kind != ND_TENSOR_PARAM) continue;
    int seen = 0;
    for (int k = 0; k < tr->n_hf && !seen; k++) seen = strcmp(tr->ckpt[k].name, t->hf_name) == 0;
    if (seen) continue;
    /* insertion in checkpoint order, whatever the layout */
    int at = tr->n_hf++;
    for (; at > 0 && nd_gpt_param_order(tr->ckpt[at - 1].name) > nd_gpt_param_order(t->hf_name); at--)
      tr->ckpt[at] = tr->ckpt[at - 1];
    tr->ckpt[at] = (nd_ckpt_tensor){
        t->hf_name, t->ndim, {t->full_shape[0], t->ndim > 1 ? t->full_shape[1] : 0}, nd_shard_full_numel(t)};
  }
  return 0;
}

const char *nd_trainer_tensor_name(const nd_trainer *tr, int i, long long *numel) {
  if (i < 0 || i >= tr->n_hf) return NULL;
  if (numel) *numel = tr->ckpt[i].numel;
  return tr->ckpt[i].name;
}

long long nd_trainer_steps_done(const nd_trainer *tr) { return tr->steps_done; }

nd_exec *nd__trainer_exec(nd_trainer *tr) { return tr->exec; }
const nd_graph *nd__trainer_graph(const nd_trainer *tr) { return tr->step_graph; }

static enum nd_gather gather_kind(const nd_tensor *t) {
  if (t->kind == ND_TENSOR_GRAD) return ND_GATHER_GRAD;
  if (t->kind == ND_TENSOR_OPTSTATE) {
    size_t n = strlen(t->name);
    return t->name[n - 1] == 'm' ? ND_GATHER_ADAM_M : ND_GATHER_ADAM_V;
  }
  return ND_GATHER_PARAM;
}

static int is_kind(const nd_tensor *t, enum nd_gather what) {
  if (t->kind != ND_TENSOR_PARAM && t->kind != ND_TENSOR_GRAD && t->kind != ND_TENSOR_OPTSTATE) return 0;
  return gather_kind(t) == what;
}

int nd_trainer_gather(nd_trainer *tr, const char *hf_name, enum nd_gather what, float *out, long long n) {
  const nd_graph *g = tr->step_graph;
  int found = 0;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    if (!t->primary || !is_kind(t, what) || strcmp(t->hf_name, hf_name) != 0) continue;
    if (nd_shard_full_numel(t) != n) return ND_EINVAL;
    float *p = nd_exec_acquire(tr->exec, i, 0);
    int rc = nd_shard_copy(g, i, out, p, 1);
    nd_exec_release(tr->exec, i);
    if (rc) return rc;
    found = 1;
  }
  return found ? 0 : ND_EINVAL;
}

/* Copies a whole tensor into every shard and copy that holds part of it. */
static int scatter(nd_trainer *tr, const char *hf_name, enum nd_gather what, const float *full) {
  const nd_graph *g = tr->step_graph;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    /* with several processes, each writes the tensors it owns */
    if (!is_kind(t, what) || strcmp(t->hf_name, hf_name) != 0 || !nd_exec_local(tr->exec, i)) continue;
    float *p = nd_exec_acquire(tr->exec, i, 1);
    int rc = nd_shard_copy(g, i, (float *)full, p, 0); /* to the shard: full is only read */
    nd_exec_release(tr->exec, i);
    if (rc) return rc;
  }
  return 0;
}

/* Step 0's state: the parameters initialized, Adam's moments zero. The
 * executor allocates every tensor zeroed, so the moments need zeroing only
 * after steps have run (zero_moments). */
static int initialize(nd_trainer *tr, int zero_moments) {
  for (int k = 0; k < tr->n_hf; k++) {
    const nd_ckpt_tensor *t = &tr->ckpt[k];
    float *full = malloc((size_t)t->numel * sizeof *full);
    if (!full) return ND_ENOMEM;
    nd_init_tensor(full, t->name, t->numel, (int)tr->cfg.model.n_layer, tr->cfg.train.seed);
    int rc = scatter(tr, t->name, ND_GATHER_PARAM, full);
    if (!rc && zero_moments) {
      memset(full, 0, (size_t)t->numel * sizeof *full);
      rc = scatter(tr, t->name, ND_GATHER_ADAM_M, full);
      if (!rc) rc = scatter(tr, t->name, ND_GATHER_ADAM_V, full);
    }
    free(full);
    if (rc) return rc;
  }
  return 0;
}

int nd__trainer_apply_hints(nd_trainer *tr, const double *measured, int cpu_only, nd_error *err) {
  int rc = nd_sched_apply_on(tr->exec, 0, tr->step_graph, &tr->cfg, measured, cpu_only, err);
  return rc ? rc : nd_sched_apply_on(tr->exec, tr->eval_index, tr->eval_graph, &tr->cfg, NULL, cpu_only, err);
}

/* The graphs on StarPU: tensors registered, hints applied, parameters initialized. */
static int bind(nd_trainer *tr, nd_error *err) {
  int rc;
  if ((rc = nd_exec_create(&tr->exec, tr->step_graph, err))) return rc;
  nd_exec_set_kernels(tr->exec, tr->kernels);
  if ((rc = nd_exec_add_graph(tr->exec, tr->eval_graph, err)) < 0) return rc;
  tr->eval_index = rc;
  if ((rc = nd__trainer_apply_hints(tr, NULL, 0, err))) return rc;
  if (collect_names(tr) || initialize(tr, 0)) return nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  return 0;
}

int nd__trainer_rewind(nd_trainer *tr, const nd_device_trial *decided, nd_error *err) {
  if (initialize(tr, 1)) return nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  tr->steps_done = 0;
  tr->decided = *decided;
  return 0;
}

int nd__trainer_restart(nd_trainer *tr, nd_error *err) {
  int rc = nd__trainer_apply_hints(tr, NULL, 0, err);
  return rc ? rc : nd__trainer_rewind(tr, &(nd_device_trial){0}, err);
}

/* The model's flops of the tasks of this process's ranks. */
static int64_t own_model_flops(const nd_graph *g) {
  int64_t flops = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (nd_mpi_process_of(g, t->rank, nd_mpi_size()) == nd_mpi_rank()) flops += nd_plan_model_flops(t);
  }
  return flops;
}

/* The step and evaluation graphs, costed by the kernels that will run them. */
static int build_graphs(nd_trainer *tr, nd_error *err) {
  int rc;
  /* under mpirun each process builds its share of the step alone (docs/nodes.md) */
  if (nd_mpi_size() > 1)
    rc = nd_mpi_build_share(&tr->cfg, nd_mpi_size(), nd_mpi_rank(), &tr->step_graph, &tr->eval_graph, err);
  else if (!(rc = nd_graph_build_pairs(&tr->step_graph, &tr->cfg, 0, NULL, nd_mpi_size(), err)))
    rc = nd_graph_build_pairs(&tr->eval_graph, &tr->cfg, 1, NULL, nd_mpi_size(), err);
  if (rc) return rc;
  if ((rc = nd_kernels_apply_costs(tr->kernels, tr->step_graph, err))) return rc;
  return nd_kernels_apply_costs(tr->kernels, tr->eval_graph, err);
}

const nd_config *nd__trainer_config(const nd_trainer *tr) { return &tr->cfg; }
int64_t nd__trainer_steps_run(const nd_trainer *tr) { return tr->steps_run; }

int nd_trainer_submission(const nd_trainer *tr, int process, long long *tasks, double *ms) {
  if (!tr->submissions || process < 0 || process >= nd_mpi_size()) return ND_EINVAL;
  *tasks = tr->submissions[process].tasks;
  *ms = tr->submissions[process].seconds * 1e3;
  return 0;
}

long long nd_trainer_graph_tasks(const nd_trainer *tr, int process) {
  return tr->submissions && process >= 0 && process < nd_mpi_size() ? tr->submissions[process].graph_tasks : -1;
}
int64_t nd__trainer_checkpoint_bytes(const nd_trainer *tr) { return tr->checkpoint_bytes; }
char *nd__trainer_resume_note(nd_trainer *tr) { return tr->resume_note; }
char *nd__trainer_resumed(nd_trainer *tr) { return tr->resumed; }
const char *nd_trainer_resume_note(const nd_trainer *tr) { return tr->resume_note; }
const char *nd_trainer_resumed_data(const nd_trainer *tr) { return tr->resumed_data; }
struct nd_kernels *nd__trainer_kernels(const nd_trainer *tr) {
  return tr->kernels;
}
nd_trace_recorder **nd__trainer_recorder(nd_trainer *tr) { return &tr->rec; }
const nd_balance *nd__trainer_balance(const nd_trainer *tr) { return &tr->balance; }

int nd_trainer_open(nd_trainer **out, const nd_config *cfg, nd_error *err) {
  int rc = nd_config_validate(cfg, err);
  if (rc) return rc;
  /* runtime.topology is the machine plan describes; a run trains on this
   * one, but a file that is no topology is bad input here as it is there */
  if (cfg->runtime.topology[0] && (rc = nd_topo_check(cfg->runtime.topology, err))) return rc;
  if ((rc = nd_mpi_join(nd_trainer_config_hash(cfg), cfg->source, err))) return rc;
  nd_trainer *tr = calloc(1, sizeof *tr);
  if (!tr) return nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  tr->save_lock = -1;
  tr->cfg = *cfg;
  const nd_config *c = &tr->cfg;
  /* under mpirun each phase ends with the processes agreeing on how it went
   * (a failure on one of them is every one's), before the next phase waits
   * on all of them: StarPU-MPI's start, the balancing steps */
  /* plugins first: the graph's costs come from the kernels that will run it */
  if (!(rc = nd_kernels_open(&tr->kernels, c, err)) && !(rc = build_graphs(tr, err))) {
    nd_plan plan;
    if (nd_plan_compute(tr->step_graph, &plan)) {
      rc = nd__fail(err, ND_ENOMEM, "trainer: out of memory");
    } else {
      tr->model_flops = plan.model_flops;
      nd_plan_free(&plan);
    }
  }
  if ((rc = nd_mpi_agree(rc, err))) goto fail;
  /* a share's graph holds its neighbours' work too: each process counts its own ranks' */
  if (nd_mpi_size() > 1) tr->model_flops = nd_mpi_sum(own_model_flops(tr->step_graph));
  tr->seqs_per_step = c->parallelism.data_parallel_size * c->parallelism.micro_batches * c->train.micro_batch_size;
  tr->runtime_started = !(rc = nd_runtime_start(c, err));
  if (!rc && !(rc = nd_sched_check_memory(tr->step_graph, c, err))) rc = bind(tr, err);
  if ((rc = nd_mpi_agree(rc, err))) goto fail;
  /* stage_layers: auto measures the devices on the even split; a new split
   * rebuilds, the even one kept starts again on the same executor, so that
   * it runs exactly what equal stages run */
  if (c->parallelism.stage_layers_auto && c->parallelism.pipeline_parallel_size > 1) {
    if ((rc = nd__balance_stages(tr, &tr->balance, err))) goto fail;
    int kept = 1;
    for (int s = 0; s < tr->balance.stages; s++) kept &= tr->balance.split[s] == tr->step_graph->stage_layers[s];
    memcpy(tr->cfg.parallelism.stage_layers, tr->balance.split, sizeof tr->balance.split);
    tr->cfg.parallelism.n_stage_layers = c->parallelism.pipeline_parallel_size;
    if (kept) {
      rc = tr->steps_done ? nd__trainer_restart(tr, err) : 0;
    } else {
      nd_exec_free(tr->exec);
      tr->exec = NULL;
      nd_graph_free(tr->step_graph);
      nd_graph_free(tr->eval_graph);
      tr->step_graph = tr->eval_graph = NULL;
      free(tr->ckpt);
      tr->ckpt = NULL, tr->n_hf = 0;
      tr->steps_done = 0;
      if (!(rc = build_graphs(tr, err))) rc = bind(tr, err);
    }
    if ((rc = nd_mpi_agree(rc, err))) goto fail;
  }
  *out = tr;
  return 0;
fail:
  nd_trainer_close(tr);
  return rc;
}

void nd_trainer_close(nd_trainer *tr) {
  /* a process apart (tasks/mpi.h) leaves StarPU as it is: unregistering its
   * data would wait on transfers the others never finish, and its exit
   * aborts the job anyway */
  if (!tr || nd_mpi_is_apart()) return;
  nd_trace_recorder_free(tr->rec);
  nd_exec_free(tr->exec);
  if (tr->runtime_started) nd_runtime_stop();
  nd_kernels_close(tr->kernels);
  nd_graph_free(tr->step_graph);
  nd_graph_free(tr->eval_graph);
  nd_dataset_close(tr->train);
  nd_dataset_close(tr->val);
  if (tr->save_lock >= 0) close(tr->save_lock); /* the next run may write there */
  free(tr->ckpt);
  free(tr->submissions);
  for (int w = 0; w < 4; w++) free(tr->wpe_extra.data[w]);
  free(tr);
}

static nd_step base_step(const nd_trainer *tr) {
  const nd_config *c = &tr->cfg;
  return (nd_step){.seq_limit = INT64_MAX,
                   .beta1 = (float)c->train.adam_beta1,
                   .beta2 = (float)c->train.adam_beta2,
                   .eps = (float)c->train.adam_epsilon,
                   .weight_decay = (float)c->train.weight_decay,
                   .grad_clip = (float)c->train.grad_clip,
                   .loss_scale = (float)(1.0 / ((double)tr->seqs_per_step * (double)c->model.seq_len))};
}

int nd_trainer_device_trial(const nd_trainer *tr, nd_device_trial *out) {
  if (!tr || !out) return ND_EINVAL;
  *out = tr->decided;
  return 0;
}

int nd__trainer_tries_cpu_alone(const nd_config *cfg, const nd_graph *g) {
  /* strict placement holds each rank to its devices: the user's choice stays */
  return cfg->runtime.placement != ND_PLACEMENT_STRICT && !nd_sched_is_fixed(cfg->runtime.scheduler) &&
         nd_sched_mixed_ranks(g);
}

/* A data set opened on first use: `eval --data X` needs neither data.train
 * nor data.val, and must not fail on them. */
static int dataset(const nd_trainer *tr, nd_dataset **ds, const char *spec, nd_error *err) {
  const nd_config *c = &tr->cfg;
  if (*ds) return 0;
  if (c->data.tokenizer[0])
    return nd_dataset_open_tokenized(ds, spec, c->data.tokenizer, c->model.vocab_size, (int)c->model.seq_len, err);
  return nd_dataset_open(ds, spec, c->data.format, c->model.vocab_size, (int)c->model.seq_len, err);
}

/* data.val too, so that a bad one stops the run before its first step, not at its first evaluation */
int nd__trainer_open_data(nd_trainer *tr, nd_error *err) {
  int rc = dataset(tr, &tr->train, tr->cfg.data.train, err);
  return rc || !tr->cfg.data.val[0] ? rc : dataset(tr, &tr->val, tr->cfg.data.val, err);
}

/* A step's outcome: a failed read of its data (the file cut short or
 * rewritten under the run) is what went wrong, whatever the tasks reported
 * after it. The step was not applied (tasks/codelets.c): the state is that
 * of the steps done. */
int nd_trainer_step(nd_trainer *tr, nd_step_result *res, nd_error *err) {
  /* opened on first use; under mpirun agreed on before a step that waits on
   * every process, once on each (process 0 alone may have opened them,
   * checking the save directory) */
  nd_step s = base_step(tr);
  s.seq_base = tr->steps_done * tr->seqs_per_step;
  s.lr = (float)learning_rate(&tr->cfg, tr->steps_done);
  s.adam_t = (int)tr->steps_done + 1;
  int rc = tr->data_agreed ? 0 : nd_mpi_agree(nd__trainer_open_data(tr, err), err);
  if (rc) return rc;
  tr->data_agreed = 1;
  s.data = tr->train;
  double t0 = now_ms();
  rc = nd_exec_run(tr->exec, 0, &s, err);
  /* a batch the data set could not read: its error, not the run's; then
   * every process reads the step's statistics from their owners: all of
   * them, or none when one failed (a kernel's error is its process's) */
  int lost = nd_dataset_failure(tr->train, err);
  if ((rc = nd_mpi_agree(lost ? lost : rc, err))) return rc;
  double ms = now_ms() - t0;
  if (!tr->submissions && !(tr->submissions = calloc((size_t)nd_mpi_size(), sizeof *tr->submissions)))
    return nd__fail(err, ND_ENOMEM, "out of memory");
  nd__submission mine;
  nd_exec_submission(tr->exec, &mine.tasks, &mine.seconds);
  mine.graph_tasks = tr->step_graph->n_tasks;
  nd_mpi_allgather(&mine, sizeof mine, tr->submissions); /* every process's, for process 0's metrics */
  double loss = nd_exec_read_loss(tr->exec, tr->step_graph);
  tr->steps_done++;
  tr->steps_run++;
  memset(res, 0, sizeof *res);
  res->step = tr->steps_done;
  res->loss = loss;
  res->lr = s.lr;
  res->grad_norm = sqrt(nd_exec_read_f64(tr->exec, tr->step_graph->grad_normsq));
  res->step_ms = ms;
  res->tokens_per_s = (double)tr->seqs_per_step * (double)tr->cfg.model.seq_len / (ms / 1e3);
  res->gflops = (double)tr->model_flops / (ms / 1e3) / 1e9;
  res->tasks_submitted = mine.tasks;
  res->submit_ms = mine.seconds * 1e3;
  if (!isfinite(loss) || !isfinite(res->grad_norm))
    return nd__fail(err, ND_ENUMERIC, "step %lld: the loss is not finite (%g); training stopped", res->step, loss);
  return 0;
}

int nd_trainer_eval(nd_trainer *tr, const char *data, long long batches, double *loss, long long *tokens,
                    nd_error *err) {
  const nd_config *c = &tr->cfg;
  nd_dataset *own = NULL, *ds;
  int rc;
  if (data) {
    rc = dataset(tr, &own, data, err);
    ds = own;
  } else {
    if (!c->data.val[0])
      return nd__fail(err, ND_EINVAL, "%s: data.val is not set: nothing to evaluate on",
                      nd__config_origin(c, "data.val"));
    rc = dataset(tr, &tr->val, c->data.val, err);
    ds = tr->val;
  }
  /* every process evaluates, or none */
  if ((rc = nd_mpi_agree(rc, err))) goto done;
  int64_t seqs = batches * c->train.micro_batch_size;
  nd_step s = base_step(tr);
  s.data = ds;
  s.seq_limit = seqs;
  s.loss_scale = (float)(1.0 / ((double)seqs * (double)c->model.seq_len));
  double total = 0.0;
  for (int64_t base = 0; base < seqs; base += tr->seqs_per_step) {
    s.seq_base = base;
    rc = nd_exec_run(tr->exec, tr->eval_index, &s, err);
    int lost = nd_dataset_failure(ds, err);
    if ((rc = nd_mpi_agree(lost ? lost : rc, err))) goto done;
    total += nd_exec_read_loss(tr->exec, tr->step_graph);
  }
  *loss = total;
  *tokens = seqs * c->model.seq_len;
  rc = isfinite(total) ? 0 : nd__fail(err, ND_ENUMERIC, "evaluation: the loss is not finite (%g)", total);
done:
  nd_dataset_close(own);
  return rc;
}

int nd_trainer_data_prefix(nd_trainer *tr, int *ids, int n, nd_error *err) {
  const nd_config *c = &tr->cfg;
  int val = c->data.val[0] != '\0';
  if (n < 1 || n > c->model.seq_len)
    return nd__fail(err, ND_EINVAL, "data prefix: %d tokens: from 1 to model.seq_len (%lld)", n,
                    (long long)c->model.seq_len);
  int rc = val ? dataset(tr, &tr->val, c->data.val, err) : dataset(tr, &tr->train, c->data.train, err);
  if (rc) return rc;
  nd_dataset *ds = val ? tr->val : tr->train;
  int32_t *row = malloc((size_t)c->model.seq_len * sizeof *row);
  if (!row) return nd__fail(err, ND_ENOMEM, "data prefix: out of memory");
  if (!(rc = nd_dataset_read(ds, 0, 1, row, NULL)))
    for (int i = 0; i < n; i++) ids[i] = row[i];
  free(row);
  int lost = nd_dataset_failure(ds, err);
  return lost ? lost : rc;
}

/* ------------------------------------------------------------ checkpoints */

static int gather_one(void *user, int k, enum nd_gather what, float *out) {
  nd_trainer *tr = user;
  return nd_trainer_gather(tr, tr->ckpt[k].name, what, out, tr->ckpt[k].numel);
}

static int scatter_one(void *user, int k, enum nd_gather what, const float *in) {
  nd_trainer *tr = user;
  return scatter(tr, tr->ckpt[k].name, what, in);
}

static nd_ckpt_model ckpt_model(nd_trainer *tr) {
  return (nd_ckpt_model){&tr->cfg, tr->ckpt, tr->n_hf, gather_one, scatter_one, tr, 0, &tr->wpe_extra};
}

int nd_trainer_save(nd_trainer *tr, nd_error *err) {
  nd_ckpt_model m = ckpt_model(tr);
  /* several processes: every one takes part in the gathering (the reads
   * are collective), process 0 writes */
  m.gather_only = nd_mpi_rank() != 0;
  nd_ckpt_state s = {
      .step = tr->steps_done, .data_position = tr->steps_done * tr->seqs_per_step, .adam_t = tr->steps_done};
  int64_t before = nd_mpi_bytes_sent();
  int removed, rc = nd_ckpt_save(&m, &s, err);
  tr->checkpoint_bytes += nd_mpi_bytes_sent() - before;
  /* out of memory while gathering: the others may wait for this process's
   * pieces; anything else (process 0's writing, a value that is not finite,
   * which every process gathers) all learn */
  if (rc == ND_ENOMEM) return nd_mpi_apart(rc, err);
  /* retention only once the new one is complete */
  if (!rc && !m.gather_only)
    rc = nd_checkpoint_prune(tr->cfg.train.save_dir, tr->steps_done, tr->cfg.train.keep_checkpoints, &removed, err);
  return nd_mpi_agree(rc, err);
}

int nd_trainer_check_save_dir(nd_trainer *tr, nd_save_dir_check *out, nd_error *err) {
  const char *dir = tr->cfg.train.save_dir;
  memset(out, 0, sizeof *out);
  if (!dir[0]) return 0;
  uint64_t avail;
  int rc = nd__trainer_open_data(tr, err);
  if (!rc) rc = nd_checkpoint_check_dir(dir, &avail, err);
  /* one writer, held until the trainer closes; taken before the tidying,
   * so that a run refused removes and puts back nothing */
  if (!rc && tr->save_lock < 0) rc = nd_checkpoint_lock(dir, &tr->save_lock, err);
  if (!rc) rc = nd_checkpoint_clean_stale(dir, &out->removed, &out->restored, err);
  if (rc) return rc;
  /* weights and Adam's two moments, each tensor's entry in its file's JSON
   * header (its name, shape and offsets: under 256 bytes), config.json and
   * state.json; a megabyte of slack made a small model's estimate 3.6 times
   * what it wrote */
  for (int k = 0; k < tr->n_hf; k++) out->need_bytes += 3ULL * (4 * (unsigned long long)tr->ckpt[k].numel + 256);
  out->need_bytes += 16ULL << 10;
  out->free_bytes = avail;
  char latest[4200];
  int64_t step;
  const char *slash;
  if (nd_checkpoint_latest(dir, latest, sizeof latest, &(nd_error){0}) == 0 && (slash = strrchr(latest, '/')) &&
      nd__checkpoint_step_of(slash + 1, "step-", &step, NULL))
    out->newest = (long long)step;
  return 0;
}

int nd__trainer_load_dir(nd_trainer *tr, const char *dir, int with_state, nd_error *err) {
  nd_ckpt_model m = ckpt_model(tr);
  nd_ckpt_state s;
  int rc = nd_ckpt_load(&m, dir, with_state, &s, err);
  if (!rc && with_state) {
    tr->steps_done = s.step;
    memcpy(tr->resumed_data, s.data, sizeof s.data);
  }
  if (!rc) snprintf(tr->resumed, sizeof tr->resumed, "%s", dir);
  return rc;
}
