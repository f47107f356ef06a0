/* The trainer: datasets, the step's graph on StarPU, parameter
 * initialization, the learning-rate schedule, evaluation and checkpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "common/error.h"
#include "configs/config.h"
#include "data/dataset.h"
#include "graph/ir.h"
#include "graph/plan.h"
#include "graph/shard.h"
#include "kernels/registry.h"
#include "scheduler/policies.h"
#include "tasks/exec.h"
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
  nd_kernels *kernels;       /* this trainer's: its tasks carry it */
  int calibrated;            /* priorities come from measured task durations */
  int64_t steps_done;
  int64_t model_flops;       /* of one step */
  int64_t seqs_per_step;     /* dp * micro_batches * micro_batch_size */
  /* Hugging Face tensors: name, element count, a tensor of the graph holding it */
  int n_hf;
  const char **hf_names;
  int64_t *hf_numel;
  nd_balance balance;     /* stage_layers: auto */
  nd_trace_recorder *rec; /* the steps traced so far */
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

/* The Hugging Face names of the model, in the order checkpoints list them. */
static int collect_names(nd_trainer *tr) {
  const nd_graph *g = tr->step_graph;
  tr->hf_names = calloc((size_t)g->n_tensors, sizeof *tr->hf_names);
  tr->hf_numel = calloc((size_t)g->n_tensors, sizeof *tr->hf_numel);
  if (!tr->hf_names || !tr->hf_numel) return ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    if (t->kind != ND_TENSOR_PARAM) continue;
    int seen = 0;
    for (int k = 0; k < tr->n_hf && !seen; k++) seen = strcmp(tr->hf_names[k], t->hf_name) == 0;
    if (seen) continue;
    /* insertion in checkpoint order, whatever the layout */
    int at = tr->n_hf++;
    for (; at > 0 && nd_gpt_param_order(tr->hf_names[at - 1]) > nd_gpt_param_order(t->hf_name); at--) {
      tr->hf_names[at] = tr->hf_names[at - 1];
      tr->hf_numel[at] = tr->hf_numel[at - 1];
    }
    tr->hf_names[at] = t->hf_name;
    tr->hf_numel[at] = nd_shard_full_numel(t);
  }
  return 0;
}

const char *nd_trainer_tensor_name(const nd_trainer *tr, int i, long long *numel) {
  if (i < 0 || i >= tr->n_hf) return NULL;
  if (numel) *numel = tr->hf_numel[i];
  return tr->hf_names[i];
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
    nd_shard_copy(t, out, p, 1);
    nd_exec_release(tr->exec, i);
    found = 1;
  }
  return found ? 0 : ND_EINVAL;
}

/* Copies a whole tensor into every shard and copy that holds part of it. */
static void scatter(nd_trainer *tr, const char *hf_name, enum nd_gather what, float *full) {
  const nd_graph *g = tr->step_graph;
  for (int32_t i = 0; i < g->n_tensors; i++) {
    const nd_tensor *t = &g->tensors[i];
    if (!is_kind(t, what) || strcmp(t->hf_name, hf_name) != 0) continue;
    float *p = nd_exec_acquire(tr->exec, i, 1);
    nd_shard_copy(t, full, p, 0);
    nd_exec_release(tr->exec, i);
  }
}

static int initialize(nd_trainer *tr) {
  for (int k = 0; k < tr->n_hf; k++) {
    float *full = malloc((size_t)tr->hf_numel[k] * sizeof *full);
    if (!full) return ND_ENOMEM;
    nd_init_tensor(full, tr->hf_names[k], tr->hf_numel[k], (int)tr->cfg.model.n_layer, tr->cfg.train.seed);
    scatter(tr, tr->hf_names[k], ND_GATHER_PARAM, full);
    free(full);
  }
  return 0;
}

/* The graphs on StarPU: tensors registered, hints applied, parameters initialized. */
static int bind(nd_trainer *tr, nd_error *err) {
  const nd_config *c = &tr->cfg;
  int rc;
  if ((rc = nd_exec_create(&tr->exec, tr->step_graph, err))) return rc;
  nd_exec_set_kernels(tr->exec, tr->kernels);
  if ((rc = nd_exec_add_graph(tr->exec, tr->eval_graph, err)) < 0) return rc;
  tr->eval_index = rc;
  if ((rc = nd_sched_apply(tr->exec, 0, tr->step_graph, c, NULL, err)) ||
      (rc = nd_sched_apply(tr->exec, tr->eval_index, tr->eval_graph, c, NULL, err)))
    return rc;
  if (collect_names(tr) || initialize(tr)) return nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  return 0;
}

/* The step and evaluation graphs, costed by the kernels that will run them. */
static int build_graphs(nd_trainer *tr, nd_error *err) {
  int rc;
  if ((rc = nd_graph_build(&tr->step_graph, &tr->cfg, 0, err)) || (rc = nd_graph_build(&tr->eval_graph, &tr->cfg, 1, err)))
    return rc;
  nd_kernels_apply_costs(tr->kernels, tr->step_graph);
  nd_kernels_apply_costs(tr->kernels, tr->eval_graph);
  return 0;
}

const nd_config *nd__trainer_config(const nd_trainer *tr) { return &tr->cfg; }
struct nd_kernels *nd__trainer_kernels(const nd_trainer *tr) { return tr->kernels; }
nd_trace_recorder **nd__trainer_recorder(nd_trainer *tr) { return &tr->rec; }
const nd_balance *nd__trainer_balance(const nd_trainer *tr) { return &tr->balance; }

int nd_trainer_open(nd_trainer **out, const nd_config *cfg, nd_error *err) {
  int rc = nd_config_validate(cfg, err);
  if (rc) return rc;
  nd_trainer *tr = calloc(1, sizeof *tr);
  if (!tr) return nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  tr->cfg = *cfg;
  const nd_config *c = &tr->cfg;
  int64_t V = c->model.vocab_size, T = c->model.seq_len;
  if ((rc = nd_dataset_open(&tr->train, c->data.train, c->data.format, V, (int)T, err))) goto fail;
  if (c->data.val[0] && (rc = nd_dataset_open(&tr->val, c->data.val, c->data.format, V, (int)T, err))) goto fail;
  /* plugins first: the graph's costs come from the kernels that will run it */
  if ((rc = nd_kernels_open(&tr->kernels, c, err))) goto fail;
  if ((rc = build_graphs(tr, err))) goto fail;
  nd_plan plan;
  if ((rc = nd_plan_compute(tr->step_graph, &plan))) goto oom;
  tr->model_flops = plan.model_flops;
  nd_plan_free(&plan);
  tr->seqs_per_step = c->parallelism.data_parallel_size * c->parallelism.micro_batches * c->train.micro_batch_size;
  if ((rc = nd_runtime_start(c, err))) goto fail;
  tr->runtime_started = 1;
  if ((rc = bind(tr, err))) goto fail;
  /* stage_layers: auto measures the devices on the even split, then rebuilds */
  if (c->parallelism.stage_layers_auto && c->parallelism.pipeline_parallel_size > 1) {
    if ((rc = nd__balance_stages(tr, &tr->balance, err))) goto fail;
    memcpy(tr->cfg.parallelism.stage_layers, tr->balance.split, sizeof tr->balance.split);
    tr->cfg.parallelism.n_stage_layers = c->parallelism.pipeline_parallel_size;
    nd_exec_free(tr->exec);
    tr->exec = NULL;
    nd_graph_free(tr->step_graph);
    nd_graph_free(tr->eval_graph);
    tr->step_graph = tr->eval_graph = NULL;
    free(tr->hf_names);
    free(tr->hf_numel);
    tr->hf_names = NULL, tr->hf_numel = NULL, tr->n_hf = 0;
    tr->steps_done = 0;
    if ((rc = build_graphs(tr, err)) || (rc = bind(tr, err)))
      goto fail;
  }
  *out = tr;
  return 0;
oom:
  nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  rc = ND_ENOMEM;
fail:
  nd_trainer_close(tr);
  return rc;
}

void nd_trainer_close(nd_trainer *tr) {
  if (!tr) return;
  nd_trace_recorder_free(tr->rec);
  nd_exec_free(tr->exec);
  if (tr->runtime_started) nd_runtime_stop();
  nd_kernels_close(tr->kernels);
  nd_graph_free(tr->step_graph);
  nd_graph_free(tr->eval_graph);
  nd_dataset_close(tr->train);
  nd_dataset_close(tr->val);
  free(tr->hf_names);
  free(tr->hf_numel);
  free(tr);
}

static nd_step base_step(const nd_trainer *tr) {
  const nd_config *c = &tr->cfg;
  return (nd_step){.seq_limit = INT64_MAX, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                   .weight_decay = (float)c->train.weight_decay, .grad_clip = (float)c->train.grad_clip,
                   .loss_scale = (float)(1.0 / ((double)tr->seqs_per_step * (double)c->model.seq_len))};
}

static double read_f64(nd_trainer *tr, int32_t tensor) {
  double v = *(double *)nd_exec_acquire(tr->exec, tensor, 0);
  nd_exec_release(tr->exec, tensor);
  return v;
}

/* The replicas' shares of the loss, summed in replica order. */
static double total_loss(nd_trainer *tr, const nd_graph *g) {
  double sum = 0.0;
  for (int d = 0; d < g->dp; d++) sum += read_f64(tr, g->loss[d]);
  return sum;
}

static void record_duration(void *user, int graph, int32_t task, double start_us, double end_us, int worker) {
  (void)worker;
  if (graph == 0) ((double *)user)[task] = (end_us - start_us) * 1e-6;
}

/* The first step that nobody else observes measures every task; priorities
 * are then computed again from those durations instead of the FLOPs/bytes
 * model (fixed schedules have no use for them). */
static int run_step(nd_trainer *tr, const nd_step *s, nd_error *err) {
  if (tr->calibrated || nd_exec_observed(tr->exec) || nd_sched_is_fixed(tr->cfg.runtime.scheduler))
    return nd_exec_run(tr->exec, 0, s, err);
  double *seconds = calloc((size_t)tr->step_graph->n_tasks + 1, sizeof *seconds);
  if (!seconds) return nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  nd_exec_observe(tr->exec, &(nd_exec_observer){record_duration, seconds});
  int rc = nd_exec_run(tr->exec, 0, s, err);
  nd_exec_observe(tr->exec, NULL);
  if (!rc) rc = nd_sched_apply(tr->exec, 0, tr->step_graph, &tr->cfg, seconds, err);
  tr->calibrated = 1;
  free(seconds);
  return rc;
}

int nd_trainer_step(nd_trainer *tr, nd_step_result *res, nd_error *err) {
  nd_step s = base_step(tr);
  s.data = tr->train;
  s.seq_base = tr->steps_done * tr->seqs_per_step;
  s.lr = (float)learning_rate(&tr->cfg, tr->steps_done);
  s.adam_t = (int)tr->steps_done + 1;
  double t0 = now_ms();
  int rc = run_step(tr, &s, err);
  if (rc) return rc;
  double ms = now_ms() - t0;
  double loss = total_loss(tr, tr->step_graph);
  int32_t normsq = nd_graph_find(tr->step_graph, "d0p0t0.grad_normsq");
  tr->steps_done++;
  memset(res, 0, sizeof *res);
  res->step = tr->steps_done;
  res->loss = loss;
  res->lr = s.lr;
  res->grad_norm = sqrt(read_f64(tr, normsq));
  res->step_ms = ms;
  res->tokens_per_s = (double)tr->seqs_per_step * (double)tr->cfg.model.seq_len / (ms / 1e3);
  res->gflops = (double)tr->model_flops / (ms / 1e3) / 1e9;
  if (!isfinite(loss) || !isfinite(res->grad_norm))
    return nd__fail(err, ND_ENUMERIC, "step %lld: the loss is not finite (%g); training stopped", res->step, loss);
  return 0;
}

int nd_trainer_eval(nd_trainer *tr, const char *data, long long batches, double *loss, long long *tokens,
                    nd_error *err) {
  const nd_config *c = &tr->cfg;
  nd_dataset *own = NULL;
  const nd_dataset *ds = tr->val;
  int rc;
  if (data) {
    if ((rc = nd_dataset_open(&own, data, c->data.format, c->model.vocab_size, (int)c->model.seq_len, err)))
      return rc;
    ds = own;
  }
  if (!ds) return nd__fail(err, ND_EINVAL, "%s: data.val is not set: nothing to evaluate on", c->source);
  int64_t seqs = batches * c->train.micro_batch_size;
  nd_step s = base_step(tr);
  s.data = ds;
  s.seq_limit = seqs;
  s.loss_scale = (float)(1.0 / ((double)seqs * (double)c->model.seq_len));
  double total = 0.0;
  for (int64_t base = 0; base < seqs; base += tr->seqs_per_step) {
    s.seq_base = base;
    if ((rc = nd_exec_run(tr->exec, tr->eval_index, &s, err))) goto done;
    total += total_loss(tr, tr->step_graph);
  }
  *loss = total;
  *tokens = seqs * c->model.seq_len;
  rc = isfinite(total) ? 0 : nd__fail(err, ND_ENUMERIC, "evaluation: the loss is not finite (%g)", total);
done:
  nd_dataset_close(own);
  return rc;
}

/* ------------------------------------------------------------ checkpoints */

static const char *const gather_prefix[] = {"", "grad.", "m.", "v."};

/* Gathers every tensor of one kind into named whole tensors (caller frees data). */
static int gather_all(nd_trainer *tr, enum nd_gather what, nd_st_tensor *out, char (*names)[96]) {
  for (int k = 0; k < tr->n_hf; k++) {
    const nd_tensor *t = NULL;
    for (int32_t i = 0; i < tr->step_graph->n_tensors && !t; i++)
      if (strcmp(tr->step_graph->tensors[i].hf_name, tr->hf_names[k]) == 0) t = &tr->step_graph->tensors[i];
    float *full = malloc((size_t)tr->hf_numel[k] * sizeof *full);
    if (!full) return ND_ENOMEM;
    nd_trainer_gather(tr, tr->hf_names[k], what, full, tr->hf_numel[k]);
    snprintf(names[k], sizeof names[k], "%s%s", gather_prefix[what], tr->hf_names[k]);
    out[k] = (nd_st_tensor){.name = names[k], .ndim = t->ndim, .data = full};
    out[k].shape[0] = t->full_shape[0];
    out[k].shape[1] = t->full_shape[1];
  }
  return 0;
}

int nd_trainer_save(nd_trainer *tr, nd_error *err) {
  const nd_config *c = &tr->cfg;
  int n = tr->n_hf, rc = ND_ENOMEM;
  nd_st_tensor *model = calloc((size_t)n, sizeof *model), *opt = calloc(2 * (size_t)n, sizeof *opt);
  char(*names)[96] = calloc(3 * (size_t)n, sizeof *names);
  char *config_json = NULL, *state_json = NULL;
  if (!model || !opt || !names) goto done;
  if ((rc = gather_all(tr, ND_GATHER_PARAM, model, names)) ||
      (rc = gather_all(tr, ND_GATHER_ADAM_M, opt, names + n)) ||
      (rc = gather_all(tr, ND_GATHER_ADAM_V, opt + n, names + 2 * n)))
    goto done;
  if ((rc = nd_hf_config_json(&config_json, c->model.vocab_size, c->model.seq_len, c->model.n_embd,
                              c->model.n_layer, c->model.n_head)))
    goto done;
  cJSON *state = cJSON_CreateObject();
  cJSON_AddNumberToObject(state, "step", (double)tr->steps_done);
  cJSON_AddNumberToObject(state, "data_position", (double)(tr->steps_done * tr->seqs_per_step));
  cJSON_AddNumberToObject(state, "adam_t", (double)tr->steps_done);
  cJSON_AddStringToObject(state, "data", c->data.train);
  state_json = cJSON_PrintUnformatted(state);
  cJSON_Delete(state);
  nd_checkpoint_files files = {model, n, opt, 2 * n, config_json, state_json};
  rc = nd_checkpoint_write(c->train.save_dir, tr->steps_done, &files, err);
done:
  if (rc == ND_ENOMEM) nd__fail(err, rc, "%s: out of memory writing the checkpoint", c->train.save_dir);
  for (int k = 0; model && k < n; k++) free((void *)model[k].data);
  for (int k = 0; opt && k < 2 * n; k++) free((void *)opt[k].data);
  free(model);
  free(opt);
  free(names);
  free(config_json);
  free(state_json);
  return rc;
}

/* Reads one whole tensor from a checkpoint and scatters it, after checking its shape. */
static int load_tensor(nd_trainer *tr, const nd_safetensors *st, const char *path, int k, enum nd_gather what,
                       nd_error *err) {
  char name[96];
  snprintf(name, sizeof name, "%s%s", gather_prefix[what], tr->hf_names[k]);
  const float *data;
  int64_t shape[4];
  int ndim;
  int rc = nd_safetensors_get(st, name, &data, shape, &ndim, err);
  if (rc) return rc;
  const nd_tensor *t = NULL;
  for (int32_t i = 0; i < tr->step_graph->n_tensors && !t; i++)
    if (strcmp(tr->step_graph->tensors[i].hf_name, tr->hf_names[k]) == 0) t = &tr->step_graph->tensors[i];
  int ok = ndim == t->ndim && shape[0] == t->full_shape[0] && (ndim == 1 || shape[1] == t->full_shape[1]);
  if (!ok)
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s has shape [%lld%s%lld], the configuration needs [%lld%s%lld]",
                    path, name, (long long)shape[0], ndim > 1 ? ", " : "", ndim > 1 ? (long long)shape[1] : 0LL,
                    (long long)t->full_shape[0], t->ndim > 1 ? ", " : "",
                    t->ndim > 1 ? (long long)t->full_shape[1] : 0LL);
  /* the mapping is read-only; scatter copies out of it */
  float *copy = malloc((size_t)tr->hf_numel[k] * sizeof *copy);
  if (!copy) return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  memcpy(copy, data, (size_t)tr->hf_numel[k] * sizeof *copy);
  scatter(tr, tr->hf_names[k], what, copy);
  free(copy);
  return 0;
}

int nd_trainer_load(nd_trainer *tr, const char *dir, int with_state, nd_error *err) {
  char path[ND_PATH_MAX + 64];
  nd_safetensors *model = NULL, *opt = NULL;
  cJSON *state = NULL;
  char *text = NULL;
  int rc;
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  if ((rc = nd_safetensors_open(&model, path, err))) goto done;
  for (int k = 0; k < tr->n_hf; k++)
    if ((rc = load_tensor(tr, model, path, k, ND_GATHER_PARAM, err))) goto done;
  if (!with_state) goto done;
  snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
  if ((rc = nd_safetensors_open(&opt, path, err))) goto done;
  for (int k = 0; k < tr->n_hf; k++)
    if ((rc = load_tensor(tr, opt, path, k, ND_GATHER_ADAM_M, err)) ||
        (rc = load_tensor(tr, opt, path, k, ND_GATHER_ADAM_V, err)))
      goto done;
  snprintf(path, sizeof path, "%s/state.json", dir);
  FILE *f = fopen(path, "rb");
  long len = -1;
  if (f && fseek(f, 0, SEEK_END) == 0) len = ftell(f);
  if (f && len >= 0 && len < (1 << 20) && fseek(f, 0, SEEK_SET) == 0 && (text = calloc(1, (size_t)len + 1)) &&
      fread(text, 1, (size_t)len, f) == (size_t)len)
    state = cJSON_Parse(text);
  if (f) fclose(f);
  cJSON *step = cJSON_GetObjectItemCaseSensitive(state, "step");
  if (!cJSON_IsNumber(step) || step->valuedouble < 0) {
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: missing, unreadable or without a \"step\" number", path);
    goto done;
  }
  tr->steps_done = (int64_t)step->valuedouble;
done:
  nd_safetensors_close(model);
  nd_safetensors_close(opt);
  cJSON_Delete(state);
  free(text);
  return rc;
}
