/* Saving and loading a checkpoint directory: built under a temporary name
 * and renamed whole, read back with every file checked against the run. */
#include "checkpoint/checkpoint.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic.h"
#include "common/error.h"

static const char *const ckpt_files[] = {"model.safetensors", "optimizer.safetensors", "config.json", "state.json"};
#define N_CKPT_FILES (sizeof ckpt_files / sizeof ckpt_files[0])

/* A JSON text the caller hands us is checked before it lands on disk, so
 * that a resume never meets an unreadable state.json. */
static int check_json(const char *what, const char *text, nd_error *err) {
  if (!text) return nd__fail(err, ND_EINVAL, "%s: no content given", what);
  cJSON *j = cJSON_Parse(text);
  if (!j) return nd__fail(err, ND_EINVAL, "%s: content is not valid JSON", what);
  cJSON_Delete(j);
  return 0;
}

/* Writes a file inside the temporary directory. The directory rename is
 * what publishes it; the atomic writer is reused for its fsync. */
static int write_text(const char *dir, const char *name, const char *text, nd_error *err) {
  char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, name) < 0) return nd__fail(err, ND_ENOMEM, "out of memory");
  int rc = nd_write_file_atomic(path, text, strlen(text), err);
  free(path);
  return rc;
}

static int write_st(const char *dir, const char *name, const nd_st_tensor *t, int n, nd_error *err) {
  char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, name) < 0) return nd__fail(err, ND_ENOMEM, "out of memory");
  int rc = nd_safetensors_write(path, t, n, err);
  free(path);
  return rc;
}

/* An error raised inside the temporary directory names the checkpoint the
 * user will look for (step-N/model.safetensors), not the hidden temporary. */
static int name_final(nd_error *err, int rc, const char *tmp, const char *final) {
  size_t n = strlen(tmp);
  if (!err || strncmp(err->msg, tmp, n) != 0) return rc;
  char rest[ND_ERROR_MAX];
  snprintf(rest, sizeof rest, "%s", err->msg + n);
  return nd__fail(err, rc, "%s%s", final, rest);
}

int nd_checkpoint_write(const char *save_dir, int64_t step, const nd_checkpoint_files *files, nd_error *err) {
  int rc = 0;
  char *tmp = NULL, *final = NULL, *old = NULL;
  int have_tmp = 0, have_old = 0;

  if (!save_dir || !*save_dir) return nd__fail(err, ND_EINVAL, "checkpoint: empty save_dir");
  if (step < 0) return nd__fail(err, ND_EINVAL, "%s: negative step %" PRId64, save_dir, step);
  if (!files) return nd__fail(err, ND_EINVAL, "%s: no checkpoint files given", save_dir);
  if ((rc = check_json("config.json", files->config_json, err)) ||
      (rc = check_json("state.json", files->state_json, err)))
    return rc;

  long pid = (long)getpid();
  if (asprintf(&tmp, "%s/.step-%" PRId64 ".tmp-%ld", save_dir, step, pid) < 0) tmp = NULL;
  if (asprintf(&final, "%s/step-%" PRId64, save_dir, step) < 0) final = NULL;
  if (asprintf(&old, "%s/.step-%" PRId64 ".old-%ld", save_dir, step, pid) < 0) old = NULL;
  if (!tmp || !final || !old) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", save_dir);
    goto out;
  }

  if ((rc = nd__mkdir_p(save_dir, err))) goto out;
  /* A leftover from an earlier crash of a process with our pid. */
  if ((rc = nd__remove_tree(tmp, err)) || (rc = nd__remove_tree(old, err))) goto out;
  if (mkdir(tmp, 0777) != 0) {
    rc = nd__fail(err, ND_EIO, "%s: cannot create directory: %s", tmp, strerror(errno));
    goto out;
  }
  have_tmp = 1;
  if ((rc = write_st(tmp, "model.safetensors", files->model, files->n_model, err)) ||
      (rc = write_st(tmp, "optimizer.safetensors", files->optimizer, files->n_optimizer, err)) ||
      (rc = write_text(tmp, "config.json", files->config_json, err)) ||
      (rc = write_text(tmp, "state.json", files->state_json, err)) || (rc = nd__fsync_dir(tmp, err))) {
    rc = name_final(err, rc, tmp, final);
    goto out;
  }

  /* Publish. Between the two renames only the old copy exists, under its
   * aside name; the window is two system calls wide. */
  if (rename(final, old) == 0) {
    have_old = 1;
  } else if (errno != ENOENT) {
    rc = nd__fail(err, ND_EIO, "%s: cannot move the previous checkpoint aside: %s", final, strerror(errno));
    goto out;
  }
  if (rename(tmp, final) != 0) {
    rc = nd__fail(err, ND_EIO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    if (have_old && rename(old, final) == 0) have_old = 0; /* put the old one back */
    goto out;
  }
  have_tmp = 0;
  rc = nd__fsync_dir(save_dir, err);
  /* The new checkpoint is in place: the old copy goes even if the fsync failed. */
  if (have_old) {
    int rc2 = nd__remove_tree(old, rc ? NULL : err);
    if (!rc) rc = rc2;
  }
out:
  /* On failure the half-built directory goes, and the error that caused the
   * failure is the one reported. (An old copy that could not be put back
   * stays under its hidden .old name, for a person to recover.) */
  if (have_tmp) nd__remove_tree(tmp, NULL);
  free(tmp);
  free(final);
  free(old);
  return rc;
}

int nd__checkpoint_step_of(const char *name, const char *prefix, int64_t *step, const char **rest) {
  size_t n = strlen(prefix);
  if (strncmp(name, prefix, n) != 0) return 0;
  const char *p = name + n;
  if (!*p) return 0;
  int64_t v = 0;
  for (; *p && *p != '.'; p++) {
    if (*p < '0' || *p > '9') return 0;
    if (v > (INT64_MAX - 9) / 10) return 0;
    v = v * 10 + (*p - '0');
  }
  if (p == name + n || (*p && !rest)) return 0;
  if (rest) *rest = p;
  *step = v;
  return 1;
}

static int parse_step_name(const char *name, int64_t *step) {
  return nd__checkpoint_step_of(name, "step-", step, NULL);
}

/* The first of the four files missing from dir, or NULL when it is complete. */
const char *nd__checkpoint_missing(const char *dir) {
  for (size_t i = 0; i < N_CKPT_FILES; i++) {
    char path[4096];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[i]) >= (int)sizeof path) return ckpt_files[i];
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return ckpt_files[i];
  }
  return NULL;
}

static int is_complete(const char *dir) { return nd__checkpoint_missing(dir) == NULL; }

int nd_checkpoint_latest(const char *save_dir, char *path_out, size_t size, nd_error *err) {
  int rc = 0;
  int64_t best = -1;
  DIR *d = opendir(save_dir);
  if (!d) return nd__fail(err, ND_EIO, "%s: cannot open directory: %s", save_dir, strerror(errno));
  for (struct dirent *de; (de = readdir(d));) {
    int64_t step;
    char dir[4096];
    if (!parse_step_name(de->d_name, &step) || step <= best) continue;
    if (snprintf(dir, sizeof dir, "%s/%s", save_dir, de->d_name) >= (int)sizeof dir) continue;
    if (is_complete(dir)) best = step;
  }
  closedir(d);
  if (best < 0) return nd__fail(err, ND_ECHECKPOINT, "%s: no complete step-N checkpoint", save_dir);
  int n = snprintf(path_out, size, "%s/step-%" PRId64, save_dir, best);
  if (n < 0 || (size_t)n >= size)
    rc = nd__fail(err, ND_EINVAL, "%s: path of step-%" PRId64 " does not fit in %zu bytes", save_dir, best, size);
  return rc;
}

/* A config.json object naming its architecture and model type, or NULL (out of memory). */
static cJSON *hf_config_new(const char *architecture, const char *model_type) {
  cJSON *c = cJSON_CreateObject();
  cJSON *arch = cJSON_CreateStringArray((const char *const[]){architecture}, 1);
  if (!c || !arch || !cJSON_AddItemToObject(c, "architectures", arch)) {
    cJSON_Delete(arch);
    cJSON_Delete(c);
    return NULL;
  }
  if (!cJSON_AddStringToObject(c, "model_type", model_type)) {
    cJSON_Delete(c); /* and arch with it */
    return NULL;
  }
  return c;
}

/* What transformers needs beside the model, the same in every config.json:
 * the weights' dtype, and bos/eos ids valid for the vocabulary. ndgraph
 * trains on ids it does not interpret, so both name the last id, as GPT-2's
 * <|endoftext|> is (50256 of 50257); without them transformers falls back to
 * GPT-2's 50256, past a small vocabulary. Returns 0, or -1 out of memory. */
static int hf_config_common(cJSON *c, int64_t vocab_size) {
  return cJSON_AddStringToObject(c, "torch_dtype", "float32") &&
                 cJSON_AddNumberToObject(c, "bos_token_id", (double)(vocab_size - 1)) &&
                 cJSON_AddNumberToObject(c, "eos_token_id", (double)(vocab_size - 1))
             ? 0
             : -1;
}

/* rope_parameters as transformers 5 reads it (the RoPE type, its theta and
 * Llama 3's scaling), and rope_scaling as earlier versions read it (null for
 * the default RoPE; their theta is the top-level rope_theta, also written). */
static int hf_rope_parameters(cJSON *c, const nd_hf_llama *m) {
  int llama3 = m->rope_factor != 1.0;
  cJSON *r = cJSON_AddObjectToObject(c, "rope_parameters"), *scaling;
  if (!r || !cJSON_AddStringToObject(r, "rope_type", llama3 ? "llama3" : "default") ||
      !cJSON_AddNumberToObject(r, "rope_theta", m->rope_theta))
    return -1;
  if (!llama3) return cJSON_AddNullToObject(c, "rope_scaling") ? 0 : -1;
  if (!cJSON_AddNumberToObject(r, "factor", m->rope_factor) ||
      !cJSON_AddNumberToObject(r, "low_freq_factor", m->rope_low_freq_factor) ||
      !cJSON_AddNumberToObject(r, "high_freq_factor", m->rope_high_freq_factor) ||
      !cJSON_AddNumberToObject(r, "original_max_position_embeddings", (double)m->rope_original_context) ||
      !(scaling = cJSON_Duplicate(r, 1)))
    return -1;
  if (!cJSON_AddItemToObject(c, "rope_scaling", scaling)) {
    cJSON_Delete(scaling);
    return -1;
  }
  return 0;
}

int nd_hf_config_json(char **out, int64_t vocab_size, int64_t n_positions, int64_t n_embd, int64_t n_layer,
                      int64_t n_head) {
  *out = NULL;
  if (vocab_size < 1 || n_positions < 1 || n_embd < 1 || n_layer < 1 || n_head < 1) return ND_EINVAL;
  int rc = ND_ENOMEM;
  /* The values transformers reads for GPT2Config; dropout is 0 because these
   * weights were trained without it. */
  cJSON *c = hf_config_new("GPT2LMHeadModel", "gpt2");
  if (!c || !cJSON_AddNumberToObject(c, "vocab_size", (double)vocab_size) ||
      !cJSON_AddNumberToObject(c, "n_positions", (double)n_positions) ||
      !cJSON_AddNumberToObject(c, "n_ctx", (double)n_positions) ||
      !cJSON_AddNumberToObject(c, "n_embd", (double)n_embd) ||
      !cJSON_AddNumberToObject(c, "n_layer", (double)n_layer) ||
      !cJSON_AddNumberToObject(c, "n_head", (double)n_head) || !cJSON_AddNullToObject(c, "n_inner") ||
      !cJSON_AddStringToObject(c, "activation_function", "gelu_new") ||
      !cJSON_AddNumberToObject(c, "layer_norm_epsilon", 1e-5) ||
      !cJSON_AddNumberToObject(c, "initializer_range", 0.02) || !cJSON_AddNumberToObject(c, "resid_pdrop", 0.0) ||
      !cJSON_AddNumberToObject(c, "embd_pdrop", 0.0) || !cJSON_AddNumberToObject(c, "attn_pdrop", 0.0) ||
      !cJSON_AddTrueToObject(c, "tie_word_embeddings") || !cJSON_AddTrueToObject(c, "scale_attn_weights") ||
      !cJSON_AddTrueToObject(c, "use_cache") || hf_config_common(c, vocab_size))
    goto out;
  *out = cJSON_Print(c);
  if (*out) rc = 0;
out:
  cJSON_Delete(c);
  return rc;
}

int nd_hf_llama_config_json(char **out, const nd_hf_llama *m) {
  *out = NULL;
  if (m->vocab_size < 1 || m->hidden_size < 1 || m->num_hidden_layers < 1 || m->num_attention_heads < 1 ||
      m->num_key_value_heads < 1 || m->intermediate_size < 1)
    return ND_EINVAL;
  int rc = ND_ENOMEM;
  /* every field LlamaConfig reads; no dropout and no biases in what ndgraph trains */
  cJSON *c = hf_config_new("LlamaForCausalLM", "llama");
  if (!c || !cJSON_AddNumberToObject(c, "vocab_size", (double)m->vocab_size) ||
      !cJSON_AddNumberToObject(c, "max_position_embeddings", (double)m->max_position_embeddings) ||
      !cJSON_AddNumberToObject(c, "hidden_size", (double)m->hidden_size) ||
      !cJSON_AddNumberToObject(c, "intermediate_size", (double)m->intermediate_size) ||
      !cJSON_AddNumberToObject(c, "num_hidden_layers", (double)m->num_hidden_layers) ||
      !cJSON_AddNumberToObject(c, "num_attention_heads", (double)m->num_attention_heads) ||
      !cJSON_AddNumberToObject(c, "num_key_value_heads", (double)m->num_key_value_heads) ||
      !cJSON_AddNumberToObject(c, "head_dim", (double)(m->hidden_size / m->num_attention_heads)) ||
      !cJSON_AddStringToObject(c, "hidden_act", "silu") ||
      !cJSON_AddNumberToObject(c, "rms_norm_eps", m->rms_norm_eps) ||
      !cJSON_AddNumberToObject(c, "rope_theta", m->rope_theta) ||
      !cJSON_AddBoolToObject(c, "tie_word_embeddings", m->tie_word_embeddings) ||
      !cJSON_AddFalseToObject(c, "attention_bias") || !cJSON_AddFalseToObject(c, "mlp_bias") ||
      !cJSON_AddNumberToObject(c, "attention_dropout", 0.0) || !cJSON_AddNumberToObject(c, "initializer_range", 0.02) ||
      !cJSON_AddNumberToObject(c, "pretraining_tp", 1) || !cJSON_AddTrueToObject(c, "use_cache") ||
      hf_rope_parameters(c, m) || hf_config_common(c, m->vocab_size))
    goto out;
  *out = cJSON_Print(c);
  if (*out) rc = 0;
out:
  cJSON_Delete(c);
  return rc;
}
