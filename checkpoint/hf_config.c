/* Hugging Face config.json fields beyond the sizes (checkpoint/hf_config.h).
 * Absent fields take transformers' defaults, which are what ndgraph computes;
 * a field is compared with the configuration when the configuration has a key
 * for it, and otherwise accepted only at the value ndgraph computes. */
#include "checkpoint/hf_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

/* GPT-2's LayerNorm epsilon is fixed in every backend's kernel (kernels/cpu/layernorm.c). */
#define GPT2_LN_EPS 1e-5

/* A real field of obj near want (relative 1e-6: the JSON's printed digits);
 * absent is accepted. name is the field as the message shows it; code is
 * what a different value is: ND_ECHECKPOINT where the configuration has a key
 * for it (the two disagree), ND_ENOTIMPL where ndgraph computes only want. */
static int real_field(const cJSON *obj, const char *path, const char *field, const char *name, const char *key,
                      double want, int code, nd_error *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsNumber(v)) return nd__fail(err, ND_ECHECKPOINT, "%s: %s must be a number", path, name);
  if (!(fabs(v->valuedouble - want) <= 1e-6 * fabs(want)))
    return nd__fail(err, code, "%s: %s is %g, %s %g", path, name, v->valuedouble, key, want);
  return 0;
}

/* A boolean field that ndgraph computes only at `want` (absent or null: transformers' default, which is want). */
static int bool_field(const cJSON *doc, const char *path, const char *field, int want, const char *why, nd_error *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, field);
  if (!v || cJSON_IsNull(v) || (cJSON_IsBool(v) && cJSON_IsTrue(v) == want)) return 0;
  if (!cJSON_IsBool(v)) return nd__fail(err, ND_ECHECKPOINT, "%s: %s must be a boolean", path, field);
  return nd__fail(err, ND_ENOTIMPL, "%s: %s is %s: %s", path, field, want ? "false" : "true", why);
}

/* A string field among the (NULL-ended) accepted ones; absent is accepted. */
static int string_field(const cJSON *doc, const char *path, const char *field, const char *const *accepted,
                        const char *why, nd_error *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, field);
  if (!v) return 0;
  if (!cJSON_IsString(v)) return nd__fail(err, ND_ECHECKPOINT, "%s: %s must be a string", path, field);
  for (int i = 0; accepted[i]; i++)
    if (strcmp(v->valuestring, accepted[i]) == 0) return 0;
  return nd__fail(err, ND_ENOTIMPL, "%s: %s is %s: %s", path, field, v->valuestring, why);
}

/* Llama 3's scaling parameters in r (required), against the configuration's. */
static int llama3_fields(const cJSON *r, const char *path, const char *field, const nd_config *c, nd_error *err) {
  const struct {
    const char *name, *key;
    double want;
  } p[] = {{"factor", "model.rope_factor", c->model.rope_factor},
           {"low_freq_factor", "model.rope_low_freq_factor", c->model.rope_low_freq_factor},
           {"high_freq_factor", "model.rope_high_freq_factor", c->model.rope_high_freq_factor},
           {"original_max_position_embeddings", "model.rope_original_context", (double)c->model.rope_original_context}};
  int rc = 0;
  for (size_t i = 0; i < sizeof p / sizeof p[0] && !rc; i++) {
    char name[96], key[96];
    snprintf(name, sizeof name, "%s.%s", field, p[i].name);
    snprintf(key, sizeof key, "the configuration has %s", p[i].key);
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r, p[i].name)))
      rc = nd__fail(err, ND_ECHECKPOINT, "%s: %s must be a number (rope_type llama3)", path, name);
    else
      rc = real_field(r, path, p[i].name, name, key, p[i].want, ND_ECHECKPOINT, err);
  }
  return rc;
}

/* rope_parameters (transformers 5, which puts rope_theta there) or
 * rope_scaling (earlier versions): the default RoPE, or Llama 3's scaling
 * with the configuration's parameters. *kind: 0 absent, 1 default, 2 llama3. */
static int rope_field(const cJSON *doc, const char *path, const char *field, const nd_config *c, int *kind,
                      nd_error *err) {
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(doc, field);
  if (!r || cJSON_IsNull(r)) return 0;
  if (!cJSON_IsObject(r)) return nd__fail(err, ND_ECHECKPOINT, "%s: %s must be an object or null", path, field);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(r, "rope_type");
  if (!type) type = cJSON_GetObjectItemCaseSensitive(r, "type"); /* the older spelling */
  int is3 = cJSON_IsString(type) && strcmp(type->valuestring, "llama3") == 0;
  if (type && !is3 && (!cJSON_IsString(type) || strcmp(type->valuestring, "default") != 0))
    return nd__fail(err, ND_ENOTIMPL, "%s: %s.%s is %s: ndgraph computes the default RoPE and llama3's", path, field,
                    type->string, cJSON_IsString(type) ? type->valuestring : "not a string");
  char name[64];
  snprintf(name, sizeof name, "%s.rope_theta", field);
  int rc = real_field(r, path, "rope_theta", name, "the configuration has model.rope_theta", c->model.rope_theta,
                      ND_ECHECKPOINT, err);
  snprintf(name, sizeof name, "%s.partial_rotary_factor", field);
  if (!rc)
    rc = real_field(r, path, "partial_rotary_factor", name, "ndgraph rotates whole heads:", 1.0, ND_ENOTIMPL, err);
  *kind = is3 ? 2 : 1;
  if (!rc && is3) rc = llama3_fields(r, path, field, c, err);
  return rc;
}

/* A sliding window is active when it is a number and use_sliding_window is
 * not false (Mistral's and Qwen2's meaning); one that covers model.seq_len
 * masks nothing, so it is computed exactly. */
static int window_field(const cJSON *doc, const char *path, const nd_config *c, nd_error *err) {
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(doc, "sliding_window");
  const cJSON *use = cJSON_GetObjectItemCaseSensitive(doc, "use_sliding_window");
  if (!w || cJSON_IsNull(w) || cJSON_IsFalse(use)) return 0;
  if (!cJSON_IsNumber(w)) return nd__fail(err, ND_ECHECKPOINT, "%s: sliding_window must be a number or null", path);
  if (w->valuedouble >= (double)c->model.seq_len) return 0;
  return nd__fail(err, ND_ENOTIMPL,
                  "%s: sliding_window is %g, shorter than model.seq_len %lld: ndgraph's attention sees the whole "
                  "context",
                  path, w->valuedouble, (long long)c->model.seq_len);
}

static int llama_fields(const cJSON *doc, const char *path, const nd_config *c, nd_error *err) {
  int rc = real_field(doc, path, "rms_norm_eps", "rms_norm_eps", "the configuration has model.rms_norm_eps",
                      c->model.rms_norm_eps, ND_ECHECKPOINT, err);
  if (!rc)
    rc = real_field(doc, path, "rope_theta", "rope_theta", "the configuration has model.rope_theta",
                    c->model.rope_theta, ND_ECHECKPOINT, err);
  int params = 0, scaling = 0;
  if (!rc) rc = rope_field(doc, path, "rope_parameters", c, &params, err);
  if (!rc) rc = rope_field(doc, path, "rope_scaling", c, &scaling, err);
  if (!rc && params && scaling && params != scaling)
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: rope_parameters and rope_scaling name different RoPE types", path);
  if (!rc && params != 2 && scaling != 2 && c->model.rope_factor != 1.0)
    rc = nd__fail(err, ND_ECHECKPOINT,
                  "%s: rope_parameters has no rope_type llama3, the configuration has model.rope_factor %g", path,
                  c->model.rope_factor);
  if (!rc) rc = bool_field(doc, path, "attention_bias", 0, "ndgraph's Llama has no q/k/v/o projection biases", err);
  if (!rc) rc = bool_field(doc, path, "mlp_bias", 0, "ndgraph's Llama has no MLP biases", err);
  if (!rc)
    rc = string_field(doc, path, "hidden_act", (const char *const[]){"silu", NULL}, "ndgraph computes silu", err);
  if (!rc)
    rc = real_field(doc, path, "head_dim", "head_dim", "ndgraph's head size is model.n_embd / model.n_head",
                    (double)(c->model.n_embd / c->model.n_head), ND_ENOTIMPL, err);
  if (!rc) rc = window_field(doc, path, c, err);
  return rc;
}

static int gpt2_fields(const cJSON *doc, const char *path, const nd_config *c, nd_error *err) {
  int rc = real_field(doc, path, "layer_norm_epsilon", "layer_norm_epsilon", "ndgraph's GPT-2 LayerNorm uses",
                      GPT2_LN_EPS, ND_ENOTIMPL, err);
  /* ndgraph's gelu is the tanh approximation: transformers' gelu_new (or gelu_pytorch_tanh) */
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(doc, "activation_function");
  if (!rc && strcmp(c->model.activation, "gelu") != 0) /* a plugin's: transformers computes another */
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: activation_function is %s, the configuration has model.activation %s", path,
                  !act                  ? "gelu_new (absent)"
                  : cJSON_IsString(act) ? act->valuestring
                                        : "not a string",
                  c->model.activation);
  if (!rc)
    rc = string_field(doc, path, "activation_function", (const char *const[]){"gelu_new", "gelu_pytorch_tanh", NULL},
                      "ndgraph's gelu is the tanh approximation (gelu_new)", err);
  if (!rc)
    rc = real_field(doc, path, "n_inner", "n_inner",
                    "ndgraph's GPT-2 MLP is 4 * model.n_embd:", 4.0 * (double)c->model.n_embd, ND_ENOTIMPL, err);
  if (!rc) rc = bool_field(doc, path, "scale_attn_weights", 1, "ndgraph scales attention by 1/sqrt(head size)", err);
  if (!rc)
    rc = bool_field(doc, path, "scale_attn_by_inverse_layer_idx", 0, "ndgraph scales every layer's attention alike",
                    err);
  if (!rc) rc = bool_field(doc, path, "tie_word_embeddings", 1, "ndgraph's GPT-2 head is wte", err);
  if (!rc) rc = window_field(doc, path, c, err);
  return rc;
}

int nd__hf_config_fields(const cJSON *doc, const char *path, const nd_config *c, nd_error *err) {
  return c->model.arch == ND_ARCH_LLAMA ? llama_fields(doc, path, c, err) : gpt2_fields(doc, path, c, err);
}
