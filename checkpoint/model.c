/* Saving and loading a model's checkpoint (checkpoint/model.h): gathering
 * the tensors into safetensors files, and on the way back the checks that
 * keep a broken or mismatched checkpoint from being trained on. */
#include "checkpoint/model.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/safetensors.h"
#include "common/error.h"
#include "common/file.h"

/* Checkpoint names of each kind: "wte.weight", "m.wte.weight", "v.wte.weight". */
static const char *const prefix[] = {"", "grad.", "m.", "v."};

/* The first non-finite element, or -1. */
static int64_t first_non_finite(const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return i;
  return -1;
}

/* The rows past model.seq_len that tensor k carries (nd_ckpt_rows), or NULL. */
static nd_ckpt_rows *extra_rows(const nd_ckpt_model *m, int k) {
  return m->extra && strcmp(m->tensors[k].name, "wpe.weight") == 0 ? m->extra : NULL;
}

/* Gathers every tensor of one kind into named whole tensors (the caller frees data). */
static int gather_all(const nd_ckpt_model *m, enum nd_gather what, nd_st_tensor *out, char (*names)[96],
                      nd_error *err) {
  for (int k = 0; k < m->n; k++) {
    const nd_ckpt_tensor *t = &m->tensors[k];
    const nd_ckpt_rows *x = extra_rows(m, k);
    int64_t rows = x ? x->rows : 0, more = rows * t->shape[1];
    float *full = malloc((size_t)(t->numel + more) * sizeof *full);
    if (!full) return nd__fail(err, ND_ENOMEM, "%s: out of memory writing the checkpoint", m->cfg->train.save_dir);
    snprintf(names[k], sizeof names[k], "%s%s", prefix[what], t->name);
    out[k] =
        (nd_st_tensor){.name = names[k], .ndim = t->ndim, .data = full, .shape = {t->shape[0] + rows, t->shape[1]}};
    if (m->gather(m->user, k, what, full))
      return nd__fail(err, ND_EINVAL, "%s: cannot gather tensor %s", m->cfg->train.save_dir, names[k]);
    if (more && x->data[what])
      memcpy(full + t->numel, x->data[what], (size_t)more * sizeof *full);
    else if (more)
      memset(full + t->numel, 0, (size_t)more * sizeof *full);
    int64_t bad = first_non_finite(full, t->numel + more);
    if (bad >= 0)
      return nd__fail(err, ND_ENUMERIC,
                      "%s: checkpoint not written: tensor %s holds a non-finite value (%g at element %" PRId64 ")",
                      m->cfg->train.save_dir, names[k], (double)full[bad], bad);
  }
  return 0;
}

int nd_ckpt_save(const nd_ckpt_model *m, const nd_ckpt_state *s, nd_error *err) {
  const nd_config *c = m->cfg;
  int n = m->n, rc = ND_ENOMEM;
  nd_st_tensor *model = calloc((size_t)n, sizeof *model), *opt = calloc(2 * (size_t)n, sizeof *opt);
  char(*names)[96] = calloc(3 * (size_t)n, sizeof *names);
  char *config_json = NULL, *state_json = NULL;
  cJSON *state = NULL;
  if (!model || !opt || !names) goto oom;
  if ((rc = gather_all(m, ND_GATHER_PARAM, model, names, err)) ||
      (rc = gather_all(m, ND_GATHER_ADAM_M, opt, names + n, err)) ||
      (rc = gather_all(m, ND_GATHER_ADAM_V, opt + n, names + 2 * n, err)))
    goto done;
  rc = ND_ENOMEM;
  nd_hf_llama llama = {c->model.vocab_size,
                       c->model.seq_len,
                       c->model.n_embd,
                       nd_config_intermediate_size(c),
                       c->model.n_layer,
                       c->model.n_head,
                       nd_config_n_kv_head(c),
                       c->model.rms_norm_eps,
                       c->model.rope_theta,
                       c->model.tie_word_embeddings,
                       c->model.rope_factor,
                       c->model.rope_low_freq_factor,
                       c->model.rope_high_freq_factor,
                       c->model.rope_original_context};
  if (c->model.arch == ND_ARCH_LLAMA
          ? nd_hf_llama_config_json(&config_json, &llama)
          : nd_hf_config_json(&config_json, c->model.vocab_size, c->model.seq_len + (m->extra ? m->extra->rows : 0),
                              c->model.n_embd, c->model.n_layer, c->model.n_head))
    goto oom;
  if (!(state = cJSON_CreateObject()) || !cJSON_AddNumberToObject(state, "step", (double)s->step) ||
      !cJSON_AddNumberToObject(state, "data_position", (double)s->data_position) ||
      !cJSON_AddNumberToObject(state, "adam_t", (double)s->adam_t) ||
      !cJSON_AddStringToObject(state, "data", c->data.train) || !(state_json = cJSON_PrintUnformatted(state)))
    goto oom;
  nd_checkpoint_files files = {model, n, opt, 2 * n, config_json, state_json};
  rc = m->gather_only ? 0 : nd_checkpoint_write(c->train.save_dir, s->step, &files, err);
  goto done;
oom:
  rc = nd__fail(err, ND_ENOMEM, "%s: out of memory writing the checkpoint", c->train.save_dir);
done:
  for (int k = 0; model && k < n; k++) free((void *)model[k].data);
  for (int k = 0; opt && k < 2 * n; k++) free((void *)opt[k].data);
  cJSON_Delete(state);
  free(model);
  free(opt);
  free(names);
  free(config_json);
  free(state_json);
  return rc;
}

/* "[256, 32, 1]": a shape as the file has it. */
static void shape_text(char *buf, size_t size, const int64_t *shape, int ndim) {
  int at = snprintf(buf, size, "[");
  for (int d = 0; d < ndim && at > 0 && (size_t)at < size; d++)
    at += snprintf(buf + at, size - (size_t)at, "%s%" PRId64, d ? ", " : "", shape[d]);
  if (at > 0 && (size_t)at < size) snprintf(buf + at, size - (size_t)at, "]");
}

/* Reads tensor k of one kind, checks its shape and values, and scatters it. */
static int load_tensor(const nd_ckpt_model *m, const nd_safetensors *st, const char *path, int k, enum nd_gather what,
                       nd_error *err) {
  const nd_ckpt_tensor *t = &m->tensors[k];
  char name[96];
  snprintf(name, sizeof name, "%s%s", prefix[what], t->name);
  const float *data;
  int64_t shape[4];
  int ndim;
  int rc = nd_safetensors_get(st, name, &data, shape, &ndim, err);
  if (rc) return rc;
  int ok = ndim == t->ndim;
  for (int d = 0; d < ndim && ok; d++) ok = shape[d] == t->shape[d];
  nd_ckpt_rows *x = extra_rows(m, k);
  int64_t rows = 0;
  if (!ok && x && ndim == 2 && shape[1] == t->shape[1] && shape[0] > t->shape[0]) ok = 1, rows = shape[0] - t->shape[0];
  if (x && what == ND_GATHER_PARAM) { /* the weights say how many rows are kept */
    for (int w = 0; w < 4; w++) free(x->data[w]), x->data[w] = NULL;
    x->rows = rows;
  } else if (ok && x && rows != x->rows) {
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s has %" PRId64 " rows, the weights' %s has %" PRId64, path, name,
                    shape[0], t->name, t->shape[0] + x->rows);
  }
  if (!ok) {
    char got[128], want[128];
    shape_text(got, sizeof got, shape, ndim);
    shape_text(want, sizeof want, t->shape, t->ndim);
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s has shape %s, the configuration needs %s", path, name, got,
                    want);
  }
  int64_t more = rows * t->shape[1], bad = first_non_finite(data, t->numel + more);
  if (bad >= 0)
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s holds a non-finite value (%g at element %" PRId64 ")", path,
                    name, (double)data[bad], bad);
  if (more && !(x->data[what] = malloc((size_t)more * sizeof *data)))
    return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  if (more) memcpy(x->data[what], data + t->numel, (size_t)more * sizeof *data);
  /* the mapping is read-only and may be unaligned for the copy's users */
  float *copy = malloc((size_t)t->numel * sizeof *copy);
  if (!copy) return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  memcpy(copy, data, (size_t)t->numel * sizeof *copy);
  rc = m->scatter(m->user, k, what, copy);
  free(copy);
  return rc ? nd__fail(err, rc, "%s: out of memory", path) : 0;
}

/* A tensor of a layer the model has not: a checkpoint of a deeper model (its
 * config.json absent, which would say so) would otherwise load its first
 * layers and drop the rest without a word. Names as GPT-2's ("h.N.", under
 * "transformer." in Hugging Face's files) and Llama's ("model.layers.N."),
 * after the optimizer's "m." / "v.". */
static int no_extra_layer(const nd_ckpt_model *m, const nd_safetensors *st, const char *path, nd_error *err) {
  static const char *const skip[] = {"m.", "v.", "grad.", "transformer.", "model."};
  for (int i = 0; i < nd_safetensors_count(st); i++) {
    const char *name = nd_safetensors_name(st, i), *at = name;
    for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++)
      if (strncmp(at, skip[k], strlen(skip[k])) == 0) at += strlen(skip[k]);
    if (strncmp(at, "h.", 2) == 0)
      at += 2;
    else if (strncmp(at, "layers.", 7) == 0)
      at += 7;
    else
      continue;
    char *end;
    errno = 0;
    unsigned long long layer = strtoull(at, &end, 10);
    if (end == at || *end != '.' || !(at[0] >= '0' && at[0] <= '9')) continue;
    if (errno == ERANGE || layer >= (unsigned long long)m->cfg->model.n_layer)
      return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s is of layer %.*s, the configuration has model.n_layer %lld",
                      path, name, (int)(end - at), at, (long long)m->cfg->model.n_layer);
  }
  return 0;
}

/* A buffer that Hugging Face files may hold beside the weights, recomputed
 * from config.json: GPT-2's causal masks, older Llamas' RoPE frequencies. */
static int is_buffer(const char *name) {
  static const char *const buffers[] = {".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq"};
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++) {
    size_t b = strlen(buffers[i]);
    if (n > b && strcmp(name + n - b, buffers[i]) == 0) return 1;
  }
  return 0;
}

/* Every tensor of the file is one the model loaded (of kind a or b): one it
 * has no place for (a bias, an untied head) would otherwise be dropped, and
 * the model computed would not be the file's. */
static int no_unused(const nd_ckpt_model *m, const nd_safetensors *st, const char *path, enum nd_gather a,
                     enum nd_gather b, nd_error *err) {
  static const char hf[] = "transformer."; /* Hugging Face GPT2LMHeadModel's body */
  for (int i = 0; i < nd_safetensors_count(st); i++) {
    const char *name = nd_safetensors_name(st, i), *at = name;
    if (strncmp(at, hf, sizeof hf - 1) == 0) at += sizeof hf - 1;
    int used = a == ND_GATHER_PARAM && is_buffer(at);
    for (int k = 0; k < m->n && !used; k++) {
      size_t pa = strlen(prefix[a]), pb = strlen(prefix[b]);
      used = (strncmp(at, prefix[a], pa) == 0 && strcmp(at + pa, m->tensors[k].name) == 0) ||
             (strncmp(at, prefix[b], pb) == 0 && strcmp(at + pb, m->tensors[k].name) == 0);
    }
    if (!used)
      return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s is not one of the configured model's: it would be dropped",
                      path, name);
  }
  return 0;
}

static int load_file(const nd_ckpt_model *m, const char *dir, const char *file, enum nd_gather a, int with_b,
                     enum nd_gather b, nd_error *err) {
  char path[ND_PATH_MAX + 64];
  nd_safetensors *st = NULL;
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int rc = nd_safetensors_open(&st, path, err);
  if (!rc) rc = no_extra_layer(m, st, path, err);
  for (int k = 0; k < m->n && !rc; k++)
    if (!(rc = load_tensor(m, st, path, k, a, err)) && with_b) rc = load_tensor(m, st, path, k, b, err);
  if (!rc) rc = no_unused(m, st, path, a, with_b ? b : a, err);
  nd_safetensors_close(st);
  return rc;
}

/* A small JSON file of the checkpoint, parsed; NULL with *err filled, and
 * *missing set when the file does not exist (which a caller may accept). */
static cJSON *read_json(const char *path, int *missing, nd_error *err) {
  enum { LIMIT = 1 << 20 };
  char *text = NULL;
  cJSON *doc = NULL;
  *missing = access(path, F_OK) != 0 && errno == ENOENT;
  int rc = *missing ? ND_EIO : nd__read_file(path, LIMIT, &text, NULL);
  if (rc == ND_EDATA || rc == ND_EINVAL)
    nd__fail(err, ND_ECHECKPOINT, "%s: not a regular file of at most %d bytes", path, LIMIT);
  else if (rc)
    nd__fail(err, ND_ECHECKPOINT, "%s: cannot read: %s", path,
             *missing ? "No such file or directory" : nd_strerror(rc));
  else if (!(doc = cJSON_Parse(text)) || !cJSON_IsObject(doc)) {
    cJSON_Delete(doc);
    doc = NULL;
    nd__fail(err, ND_ECHECKPOINT, "%s: not a JSON object", path);
  }
  free(text);
  return doc;
}

/* An integer field in [lo, hi]; absent is accepted when optional. */
static int int_field(const cJSON *doc, const char *path, const char *key, int optional, int64_t lo, int64_t hi,
                     int64_t *out, nd_error *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
  if (!v && optional) return 0;
  double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
    return nd__fail(err, ND_ECHECKPOINT, "%s: \"%s\" must be an integer in %" PRId64 "..%" PRId64 "%s", path, key, lo,
                    hi, v ? "" : " (missing)");
  *out = (int64_t)d;
  return 0;
}

/* config.json's model family and the fields beyond the sizes
 * (checkpoint/hf_config.h), checked before the tensors: a file of a model
 * ndgraph does not compute (a head size of its own, biases, an untied head)
 * is refused by its field rather than by a tensor's shape or name. */
static int check_kind(const cJSON *doc, const char *path, const nd_config *c, nd_error *err) {
  int llama = c->model.arch == ND_ARCH_LLAMA;
  const char *arch = llama ? "llama" : "gpt2";
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(doc, "model_type");
  if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, arch) != 0))
    return nd__fail(err, ND_ECHECKPOINT, "%s: model_type is %s, the configuration has model.arch %s", path,
                    cJSON_IsString(type) ? type->valuestring : "not a string", arch);
  const cJSON *tie = cJSON_GetObjectItemCaseSensitive(doc, "tie_word_embeddings");
  if (llama && tie && (!cJSON_IsBool(tie) || cJSON_IsTrue(tie) != !!c->model.tie_word_embeddings))
    return nd__fail(err, ND_ECHECKPOINT,
                    "%s: tie_word_embeddings is %s, the configuration has "
                    "model.tie_word_embeddings %s",
                    path, cJSON_IsBool(tie) ? (cJSON_IsTrue(tie) ? "true" : "false") : "not a boolean",
                    c->model.tie_word_embeddings ? "true" : "false");
  return nd__hf_config_fields(doc, path, c, err);
}

/* config.json's sizes against the configuration (a model's context may be
 * longer than model.seq_len: Llama's RoPE has no position table, and GPT-2's
 * rows of wpe past seq_len are kept aside, nd_ckpt_rows). */
static int check_sizes(const cJSON *doc, const char *path, const nd_config *c, nd_error *err) {
  int llama = c->model.arch == ND_ARCH_LLAMA;
  /* at_least: the file's value may exceed the configuration's; optional: HF's default is want */
  typedef struct {
    const char *field, *key;
    int64_t want;
    int at_least, optional;
  } field;
  const field gpt2[] = {{"vocab_size", "model.vocab_size", c->model.vocab_size, 0, 0},
                        {"n_positions", "model.seq_len", c->model.seq_len, 1, 0},
                        {"n_embd", "model.n_embd", c->model.n_embd, 0, 0},
                        {"n_layer", "model.n_layer", c->model.n_layer, 0, 0},
                        {"n_head", "model.n_head", c->model.n_head, 0, 0}};
  const field llama_f[] = {{"vocab_size", "model.vocab_size", c->model.vocab_size, 0, 0},
                           {"max_position_embeddings", "model.seq_len", c->model.seq_len, 1, 0},
                           {"hidden_size", "model.n_embd", c->model.n_embd, 0, 0},
                           {"intermediate_size", "model.intermediate_size", nd_config_intermediate_size(c), 0, 0},
                           {"num_hidden_layers", "model.n_layer", c->model.n_layer, 0, 0},
                           {"num_attention_heads", "model.n_head", c->model.n_head, 0, 0},
                           {"num_key_value_heads", "model.n_kv_head", nd_config_n_kv_head(c), 0, 1}};
  const field *f = llama ? llama_f : gpt2;
  size_t nf = llama ? sizeof llama_f / sizeof llama_f[0] : sizeof gpt2 / sizeof gpt2[0];
  int rc = 0;
  for (size_t i = 0; i < nf && !rc; i++) {
    int64_t got = f[i].want;
    rc = int_field(doc, path, f[i].field, f[i].optional, 1, INT64_C(1) << 53, &got, err);
    if (!rc && (f[i].at_least ? got < f[i].want : got != f[i].want))
      rc = nd__fail(err, ND_ECHECKPOINT, "%s: %s is %" PRId64 ", the configuration has %s %" PRId64 "%s", path,
                    f[i].field, got, f[i].key, f[i].want, f[i].at_least ? " (at most the file's)" : "");
  }
  return rc;
}

/* state.json: integers only, in the range a run can reach, and the data
 * path (older checkpoints lack it). */
static int read_state(const char *dir, nd_ckpt_state *s, nd_error *err) {
  char path[ND_PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/state.json", dir);
  int missing;
  cJSON *doc = read_json(path, &missing, err);
  if (!doc) return ND_ECHECKPOINT;
  /* the most train.steps allows (configs/keys.c); a resume past the run's
   * own train.steps has nothing to do, which the caller says */
  const int64_t max_step = INT64_C(1000000000);
  *s = (nd_ckpt_state){0};
  int rc = int_field(doc, path, "step", 0, 0, max_step, &s->step, err);
  s->adam_t = s->step;
  if (!rc) rc = int_field(doc, path, "adam_t", 1, 0, max_step, &s->adam_t, err);
  if (!rc) rc = int_field(doc, path, "data_position", 1, 0, INT64_C(1) << 53, &s->data_position, err);
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(doc, "data");
  if (!rc && data && (!cJSON_IsString(data) || strlen(data->valuestring) >= sizeof s->data))
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: \"data\" must be a path (a string under %d bytes)", path, ND_PATH_MAX);
  if (!rc && data) strcpy(s->data, data->valuestring);
  cJSON_Delete(doc);
  return rc;
}

static int exists(const char *dir, const char *file) {
  char path[ND_PATH_MAX + 64];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, file);
  return stat(path, &st) == 0;
}

int nd_ckpt_load(const nd_ckpt_model *m, const char *dir, int with_state, nd_ckpt_state *s, nd_error *err) {
  int ours = exists(dir, "state.json") || exists(dir, "optimizer.safetensors"), missing;
  char path[ND_PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/config.json", dir);
  /* required when DIR is an ndgraph checkpoint; a bare weights file may lack it */
  cJSON *doc = read_json(path, &missing, err);
  int rc = doc || (missing && !ours && !with_state) ? 0 : ND_ECHECKPOINT;
  if (!rc && doc) rc = check_kind(doc, path, m->cfg, err);
  /* the tensors next: a shape that differs is named with its tensor */
  if (!rc) rc = load_file(m, dir, "model.safetensors", ND_GATHER_PARAM, 0, ND_GATHER_PARAM, err);
  if (!rc && doc) rc = check_sizes(doc, path, m->cfg, err);
  if (!rc && with_state) rc = read_state(dir, s, err);
  if (!rc && with_state) rc = load_file(m, dir, "optimizer.safetensors", ND_GATHER_ADAM_M, 1, ND_GATHER_ADAM_V, err);
  cJSON_Delete(doc);
  return rc;
}
