/* A model's checkpoint (checkpoint/model.c) on a hand-made two-tensor model:
 * a non-finite tensor is never written nor loaded, state.json is integers in
 * range, config.json must match the configuration, shapes are reported as
 * the file has them. Each message names the file and the field or tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/model.h"
#include "checkpoint/safetensors.h"
#include "configs/config.h"
#include "tests/tap.h"

static char tmpdir[] = "/tmp/nd-test-ckmodel-XXXXXX";

/* wte.weight (4, 2) and ln_f.bias (2), and wpe.weight (3, 2) in the models
 * of n_model 3: values k + i / 10, and the kind that holds a NaN (-1: none) */
static const nd_ckpt_tensor tensors[] = {
    {"wte.weight", 2, {4, 2}, 8}, {"ln_f.bias", 1, {2, 0}, 2}, {"wpe.weight", 2, {3, 2}, 6}};
static int nan_in = -1, n_model = 2;
static nd_ckpt_rows extra; /* wpe.weight's rows past the model's */
static float loaded[3][8];

static int gather(void *user, int k, enum nd_gather what, float *out) {
  (void)user;
  for (int64_t i = 0; i < tensors[k].numel; i++) out[i] = (float)(k + (double)i / 10);
  if ((int)what == nan_in && k == 1) out[1] = NAN;
  return 0;
}

static int scatter(void *user, int k, enum nd_gather what, const float *in) {
  (void)user, (void)what;
  memcpy(loaded[k], in, (size_t)tensors[k].numel * sizeof *in);
  return 0;
}

static nd_config *cfg;

static nd_ckpt_model model(void) { return (nd_ckpt_model){cfg, tensors, n_model, gather, scatter, NULL, 0, &extra}; }

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0) exit(2);
  fclose(f);
}

static char *path_in(const char *dir, const char *name) {
  static char p[4][2200];
  static int slot;
  char *out = p[slot++ % 4];
  snprintf(out, sizeof p[0], "%s/%s", dir, name);
  return out;
}

/* Loading dir fails with code and a message containing each of the (NULL-ended) parts. */
static void expect_code(int code, const char *what, const char *dir, int with_state, const char *const *parts) {
  nd_ckpt_model m = model();
  nd_ckpt_state s;
  nd_error err = {0};
  int rc = nd_ckpt_load(&m, dir, with_state, &s, &err), all = rc == code;
  for (int i = 0; parts[i]; i++) all &= strstr(err.msg, parts[i]) != NULL;
  ok(all, "%s: %s", what, err.msg);
}

static void expect_refused(const char *what, const char *dir, int with_state, const char *const *parts) {
  expect_code(ND_ECHECKPOINT, what, dir, with_state, parts);
}

static void test_save_refuses_non_finite(void) {
  nd_ckpt_model m = model();
  nd_ckpt_state s = {.step = 7, .data_position = 28, .adam_t = 7};
  nd_error err = {0};
  nan_in = ND_GATHER_ADAM_V;
  int rc = nd_ckpt_save(&m, &s, &err);
  nan_in = -1;
  ok(rc == ND_ENUMERIC && strstr(err.msg, "tensor v.ln_f.bias holds a non-finite value (nan at element 1)") &&
         strstr(err.msg, cfg->train.save_dir),
     "a NaN in the optimizer state is not saved: %s", err.msg);
  ok(access(path_in(cfg->train.save_dir, "step-7"), F_OK) != 0, "and no step-7 exists");
}

static void test_round_trip(const char *dir) {
  nd_ckpt_model m = model();
  nd_ckpt_state s = {.step = 3, .data_position = 12, .adam_t = 3}, back = {.step = 0};
  nd_error err = {0};
  ok(nd_ckpt_save(&m, &s, &err) == 0, "save step 3 (%s)", err.msg);
  ok(nd_ckpt_load(&m, dir, 1, &back, &err) == 0 && back.step == 3 && back.data_position == 12 && back.adam_t == 3 &&
         loaded[0][7] == (float)0.7 && loaded[1][1] == (float)(1.1),
     "load it back: step 3, the values (%s)", err.msg);
}

/* A copy of the good checkpoint with one file replaced (NULL: removed). */
static const char *variant(const char *good, const char *name, const char *file, const char *text) {
  static char dir[8][1024];
  static int slot;
  char *d = dir[slot++ % 8];
  char cmd[3200];
  snprintf(d, 1024, "%s/%s", tmpdir, name);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", d, good, d);
  if (system(cmd) != 0) exit(2);
  if (text)
    write_text(path_in(d, file), text);
  else
    unlink(path_in(d, file));
  return d;
}

static void test_state(const char *good) {
  static const struct {
    const char *text, *why;
  } bad[] = {{"{\"step\": 1e300}", "\"step\" must be an integer in 0..1000000000"},
             {"{\"step\": 2.5}", "\"step\" must be an integer"},
             {"{\"step\": 5e9}", "\"step\" must be an integer in 0..1000000000"},
             {"{\"step\": -1}", "\"step\" must be an integer"},
             {"{\"step\": \"3\"}", "\"step\" must be an integer"},
             {"{}", "\"step\" must be an integer in 0..1000000000 (missing)"},
             {"{\"step\": 3, \"adam_t\": 1e20}", "\"adam_t\" must be an integer"},
             {"{\"step\": 3, \"data\": 5}", "\"data\" must be a path"},
             {"[3]", "not a JSON object"},
             {"{\"step\": 3", "not a JSON object"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *d = variant(good, "state", "state.json", bad[i].text);
    expect_refused(bad[i].text, d, 1, (const char *const[]){path_in(d, "state.json"), bad[i].why, NULL});
  }
}

static void test_config_json(const char *good) {
  const char *d = variant(good, "noconfig", "config.json", NULL);
  expect_refused("config.json missing", d, 1, (const char *const[]){path_in(d, "config.json"), "No such file", NULL});
  expect_refused("config.json missing, weights only", d, 0, (const char *const[]){path_in(d, "config.json"), NULL});
  d = variant(good, "garbage", "config.json", "garbage");
  expect_refused("config.json garbage", d, 0,
                 (const char *const[]){path_in(d, "config.json"), "not a JSON object", NULL});
  d = variant(good, "other", "config.json",
              "{\"vocab_size\": 256, \"n_positions\": 64, \"n_embd\": 64, "
              "\"n_layer\": 4, \"n_head\": 4}");
  expect_refused(
      "config.json of another model", d, 0,
      (const char *const[]){path_in(d, "config.json"), "n_embd is 64, the configuration has model.n_embd 128", NULL});
  /* a bare weights file (a Hugging Face download) may come without one */
  d = variant(good, "bare", "config.json", NULL);
  unlink(path_in(d, "state.json"));
  unlink(path_in(d, "optimizer.safetensors"));
  nd_ckpt_model m = model();
  nd_ckpt_state s;
  nd_error err = {0};
  ok(nd_ckpt_load(&m, d, 0, &s, &err) == 0, "weights alone without config.json load (%s)", err.msg);
}

static void test_tensors(const char *good) {
  /* model.safetensors with a 3-D wte and a NaN in ln_f.bias */
  float w[8] = {0}, b[2] = {1, NAN};
  nd_st_tensor three[] = {{"wte.weight", 3, {4, 2, 1}, w}, {"ln_f.bias", 1, {2}, b}};
  nd_st_tensor nan[] = {{"wte.weight", 2, {4, 2}, w}, {"ln_f.bias", 1, {2}, b}};
  nd_error err = {0};
  const char *d = variant(good, "3d", "model.safetensors", NULL);
  nd_safetensors_write(path_in(d, "model.safetensors"), three, 2, &err);
  expect_refused("a 3-D tensor", d, 0,
                 (const char *const[]){"tensor wte.weight has shape [4, 2, 1], the configuration needs [4, 2]", NULL});
  d = variant(good, "nan", "model.safetensors", NULL);
  nd_safetensors_write(path_in(d, "model.safetensors"), nan, 2, &err);
  expect_refused("a NaN in the weights", d, 0,
                 (const char *const[]){path_in(d, "model.safetensors"),
                                       "tensor ln_f.bias holds a non-finite value (nan at element 1)", NULL});
  /* a deeper model's layers (without config.json to say so) are refused, not
   * dropped; a buffer of a layer the model has (Hugging Face's attn.bias
   * masks) is not */
  float one[2] = {1, 1};
  static const char *const deeper[] = {"transformer.h.4.attn.c_attn.weight", "h.17.ln_1.bias",
                                       "model.layers.4.mlp.up_proj.weight"};
  for (size_t i = 0; i < sizeof deeper / sizeof deeper[0]; i++) {
    nd_st_tensor more[] = {{"wte.weight", 2, {4, 2}, w}, {"ln_f.bias", 1, {2}, one}, {deeper[i], 1, {2}, one}};
    d = variant(good, "deeper", "config.json", NULL); /* weights alone, as a download may come */
    unlink(path_in(d, "state.json"));
    unlink(path_in(d, "optimizer.safetensors"));
    nd_safetensors_write(path_in(d, "model.safetensors"), more, 3, &err);
    char why[160];
    snprintf(why, sizeof why, "tensor %s is of layer %s, the configuration has model.n_layer 4", deeper[i],
             strchr(deeper[i], '4') ? "4" : "17");
    expect_refused(deeper[i], d, 0, (const char *const[]){path_in(d, "model.safetensors"), why, NULL});
  }
  nd_st_tensor mask[] = {{"wte.weight", 2, {4, 2}, w}, {"ln_f.bias", 1, {2}, one}, {"h.3.attn.bias", 1, {2}, one}};
  d = variant(good, "mask", "config.json", NULL);
  unlink(path_in(d, "state.json"));
  unlink(path_in(d, "optimizer.safetensors"));
  nd_safetensors_write(path_in(d, "model.safetensors"), mask, 3, &err);
  nd_ckpt_model m = model();
  nd_ckpt_state s;
  ok(nd_ckpt_load(&m, d, 0, &s, &err) == 0, "a buffer of layer 3 of 4 (h.3.attn.bias) loads (%s)", err.msg);
}

/* A config.json field that changes the model (checkpoint/hf_config.c) is
 * refused before any tensor is read: one line naming the file and the field. */
static void test_fields(const char *good, nd_config *llama, nd_config *llama3) {
  static const struct {
    int llama;
    const char *json, *why;
  } bad[] = {
      {0, "{\"layer_norm_epsilon\": 1e-3}", "layer_norm_epsilon is 0.001, ndgraph's GPT-2 LayerNorm uses 1e-05"},
      {0, "{\"activation_function\": \"gelu\"}", "activation_function is gelu: ndgraph's gelu is the tanh"},
      {0, "{\"activation_function\": \"relu\"}", "activation_function is relu"},
      {0, "{\"n_inner\": 100}", "n_inner is 100, ndgraph's GPT-2 MLP is 4 * model.n_embd: 512"},
      {0, "{\"scale_attn_by_inverse_layer_idx\": true}", "scale_attn_by_inverse_layer_idx is true"},
      {0, "{\"scale_attn_weights\": false}", "scale_attn_weights is false"},
      {0, "{\"tie_word_embeddings\": false}", "tie_word_embeddings is false: ndgraph's GPT-2 head is wte"},
      {0, "{\"sliding_window\": 16}", "sliding_window is 16, shorter than model.seq_len 64"},
      {1, "{\"rope_theta\": 500000}", "rope_theta is 500000, the configuration has model.rope_theta 10000"},
      {1, "{\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 500000.0}}",
       "rope_parameters.rope_theta is 500000, the configuration has model.rope_theta 10000"},
      {1, "{\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 8.0}}",
       "rope_parameters.rope_type is yarn: ndgraph computes the default RoPE and llama3's"},
      {1,
       "{\"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
       "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}}",
       "rope_parameters.factor is 8, the configuration has model.rope_factor 1"},
      {1, "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 1.0, \"low_freq_factor\": 1.0}}",
       "rope_scaling.high_freq_factor must be a number (rope_type llama3)"},
      {2,
       "{\"rope_parameters\": {\"rope_type\": \"default\"}, \"rope_scaling\": {\"rope_type\": \"llama3\", "
       "\"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}}",
       "rope_parameters and rope_scaling name different RoPE types"},
      {2, "{\"rope_parameters\": {\"rope_type\": \"default\"}}",
       "rope_parameters has no rope_type llama3, the configuration has model.rope_factor 8"},
      {2,
       "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
       "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 4096}}",
       "rope_scaling.original_max_position_embeddings is 4096, the configuration has model.rope_original_context 8192"},
      {1, "{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}", "rope_scaling.type is linear"},
      {1, "{\"rope_scaling\": {\"rope_type\": \"default\", \"partial_rotary_factor\": 0.5}}",
       "rope_scaling.partial_rotary_factor is 0.5"},
      {1, "{\"attention_bias\": true}", "attention_bias is true: ndgraph's Llama has no q/k/v/o projection biases"},
      {1, "{\"mlp_bias\": true}", "mlp_bias is true: ndgraph's Llama has no MLP biases"},
      {1, "{\"hidden_act\": \"gelu\"}", "hidden_act is gelu: ndgraph computes silu"},
      {1, "{\"head_dim\": 64}", "head_dim is 64, ndgraph's head size is model.n_embd / model.n_head 32"},
      {1, "{\"sliding_window\": 4, \"use_sliding_window\": true}", "sliding_window is 4, shorter than"},
      {1, "{\"rms_norm_eps\": 1e-6}", "rms_norm_eps is 1e-06, the configuration has model.rms_norm_eps 1e-05"},
  };
  nd_config *gpt2 = cfg;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *d = variant(good, "field", "config.json", bad[i].json);
    cfg = bad[i].llama == 2 ? llama3 : bad[i].llama ? llama : gpt2;
    /* a value ndgraph does not compute is bad input; one that disagrees with the configuration, a checkpoint's */
    int code =
        strstr(bad[i].why, "the configuration has") || strstr(bad[i].why, "must be") || strstr(bad[i].why, "differ")
            ? ND_ECHECKPOINT
            : ND_ENOTIMPL;
    expect_code(code, bad[i].json, d, 0, (const char *const[]){path_in(d, "config.json"), bad[i].why, NULL});
  }
  /* the values ndgraph computes load, whichever way they are written */
  char ok_llama[1024];
  snprintf(ok_llama, sizeof ok_llama,
           "{\"model_type\": \"llama\", \"vocab_size\": 256, \"max_position_embeddings\": 128, "
           "\"hidden_size\": 128, \"intermediate_size\": %lld, \"num_hidden_layers\": 4, "
           "\"num_attention_heads\": 4, \"head_dim\": 32, \"hidden_act\": \"silu\", \"attention_bias\": false, "
           "\"mlp_bias\": false, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0}, "
           "\"rope_scaling\": null, \"sliding_window\": 4, \"use_sliding_window\": false}",
           (long long)nd_config_intermediate_size(llama));
  static const char ok_gpt2[] =
      "{\"vocab_size\": 256, \"n_positions\": 64, \"n_embd\": 128, \"n_layer\": 4, \"n_head\": 4, "
      "\"activation_function\": \"gelu_new\", \"layer_norm_epsilon\": 1e-5, \"n_inner\": null, "
      "\"sliding_window\": 64, \"scale_attn_weights\": true}";
  /* transformers 5's llama3 scaling, rope_theta inside rope_parameters */
  char ok_llama3[1200];
  snprintf(ok_llama3, sizeof ok_llama3,
           "{\"model_type\": \"llama\", \"vocab_size\": 256, \"max_position_embeddings\": 128, "
           "\"hidden_size\": 128, \"intermediate_size\": %lld, \"num_hidden_layers\": 4, "
           "\"num_attention_heads\": 4, \"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 10000.0, "
           "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
           "\"original_max_position_embeddings\": 8192}}",
           (long long)nd_config_intermediate_size(llama3));
  const char *const accepted[] = {ok_gpt2, ok_llama, ok_llama3};
  nd_config *cfgs[] = {gpt2, llama, llama3};
  for (int i = 0; i < 3; i++) {
    const char *d = variant(good, "field", "config.json", accepted[i]);
    nd_error err = {0};
    nd_ckpt_state s;
    cfg = cfgs[i];
    nd_ckpt_model m = model();
    ok(nd_ckpt_load(&m, d, 0, &s, &err) == 0, "%s: loads (%s)", accepted[i], err.msg);
  }
  cfg = gpt2;
}

/* A tensor the model has no place for is refused, naming it, in the weights
 * and in the optimizer state, in one file or in shards. */
static void test_unused(const char *good) {
  float w[8] = {0}, one[2] = {1, 1};
  static const char *const unused[] = {"h.0.attn.c_attn.bias", "transformer.h.1.mlp.c_fc.bias",
                                       "model.layers.0.self_attn.q_proj.bias", "lm_head.weight"};
  nd_error err = {0};
  for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++) {
    nd_st_tensor more[] = {{"wte.weight", 2, {4, 2}, w}, {"ln_f.bias", 1, {2}, one}, {unused[i], 1, {2}, one}};
    const char *d = variant(good, "unused", "model.safetensors", NULL);
    nd_safetensors_write(path_in(d, "model.safetensors"), more, 3, &err);
    char why[160];
    snprintf(why, sizeof why, "tensor %s is not one of the configured model's: it would be dropped", unused[i]);
    expect_refused(unused[i], d, 0, (const char *const[]){path_in(d, "model.safetensors"), why, NULL});
  }
  nd_st_tensor opt[] = {{"m.wte.weight", 2, {4, 2}, w},
                        {"m.ln_f.bias", 1, {2}, one},
                        {"v.wte.weight", 2, {4, 2}, w},
                        {"v.ln_f.bias", 1, {2}, one},
                        {"v.ln_f.weight", 1, {2}, one}};
  const char *d = variant(good, "unused", "optimizer.safetensors", NULL);
  nd_safetensors_write(path_in(d, "optimizer.safetensors"), opt, 5, &err);
  expect_refused("v.ln_f.weight", d, 1,
                 (const char *const[]){path_in(d, "optimizer.safetensors"), "tensor v.ln_f.weight is not one", NULL});
  /* shards: the second one's extra tensor is found too */
  nd_st_tensor s1[] = {{"wte.weight", 2, {4, 2}, w}}, s2[] = {{"ln_f.bias", 1, {2}, one}, {"ln_f.weight", 1, {2}, one}};
  d = variant(good, "shards", "model.safetensors", NULL);
  unlink(path_in(d, "state.json"));
  unlink(path_in(d, "optimizer.safetensors"));
  nd_safetensors_write(path_in(d, "model-1.safetensors"), s1, 1, &err);
  nd_safetensors_write(path_in(d, "model-2.safetensors"), s2, 2, &err);
  write_text(path_in(d, "model.safetensors.index.json"),
             "{\"weight_map\": {\"wte.weight\": \"model-1.safetensors\", \"ln_f.bias\": "
             "\"model-2.safetensors\", \"ln_f.weight\": \"model-2.safetensors\"}}");
  expect_refused("ln_f.weight in a second shard", d, 0, (const char *const[]){"tensor ln_f.weight is not one", NULL});
}

/* A position table longer than the model's (GPT-2 with n_positions past
 * model.seq_len): the first rows are loaded, and the whole table is written
 * back with the rows past them as the file had them; Adam's moments of those
 * rows are zeros until a file holds them. */
static void test_longer_positions(void) {
  char dir[1100];
  snprintf(dir, sizeof dir, "%s/longer", tmpdir);
  mkdir(dir, 0777);
  float w[8] = {0}, one[2] = {1, 1}, pos[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  nd_st_tensor file[] = {{"wte.weight", 2, {4, 2}, w}, {"ln_f.bias", 1, {2}, one}, {"wpe.weight", 2, {5, 2}, pos}};
  nd_error err = {0};
  nd_safetensors_write(path_in(dir, "model.safetensors"), file, 3, &err);
  n_model = 3;
  nd_ckpt_model m = model();
  nd_ckpt_state s = {.step = 11, .adam_t = 11}, back;
  ok(nd_ckpt_load(&m, dir, 0, &back, &err) == 0 && extra.rows == 2 && loaded[2][5] == 5 && extra.data[0] &&
         extra.data[0][0] == 6 && extra.data[0][3] == 9,
     "wpe.weight [5, 2] into a model of 3 positions: rows 0..2 loaded, 3..4 kept (%s)", err.msg);
  ok(nd_ckpt_save(&m, &s, &err) == 0, "saved as step 11 (%s)", err.msg);
  char step[1200];
  snprintf(step, sizeof step, "%s/step-11", cfg->train.save_dir);
  nd_safetensors *st = NULL, *opt = NULL;
  const float *p = NULL, *v = NULL;
  int64_t shape[4] = {0}, vshape[4] = {0};
  int ndim = 0, vdim = 0;
  int rc = nd_safetensors_open(&st, path_in(step, "model.safetensors"), &err) ||
           nd_safetensors_get(st, "wpe.weight", &p, shape, &ndim, &err) ||
           nd_safetensors_open(&opt, path_in(step, "optimizer.safetensors"), &err) ||
           nd_safetensors_get(opt, "v.wpe.weight", &v, vshape, &vdim, &err);
  ok(!rc && ndim == 2 && shape[0] == 5 && p[5] == (float)2.5 && p[6] == 6 && p[9] == 9 && vshape[0] == 5 &&
         v[5] == (float)2.5 && v[6] == 0 && v[9] == 0,
     "written back whole: the trained rows, then the file's rows 3..4 (Adam's: zeros) (%s)", err.msg);
  nd_safetensors_close(st);
  nd_safetensors_close(opt);
  /* config.json says the whole table's positions, so the checkpoint reloads with its state */
  FILE *f = fopen(path_in(step, "config.json"), "r");
  char text[4096] = {0};
  if (f) fread(text, 1, sizeof text - 1, f), fclose(f);
  const char *np = strstr(text, "\"n_positions\":");
  ok(np && atoi(np + strlen("\"n_positions\":")) == 66, "config.json has n_positions 66 (model.seq_len 64 + 2)");
  m = model();
  ok(nd_ckpt_load(&m, step, 1, &back, &err) == 0 && extra.rows == 2 && extra.data[ND_GATHER_ADAM_V] &&
         extra.data[ND_GATHER_ADAM_V][0] == 0 && extra.data[0][0] == 6,
     "and loads back with its optimizer state (%s)", err.msg);
  for (int k = 0; k < 4; k++) free(extra.data[k]), extra.data[k] = NULL;
  extra.rows = 0;
  n_model = 2;
}

/* Retention after step 3 with 2 kept: 1 goes; 2 and 3 stay, and so does a
 * newer 9 (another run's) and an incomplete 0. */
static void test_prune(void) {
  nd_ckpt_model m = model();
  nd_error err = {0};
  for (int64_t step = 1; step <= 9; step += step == 3 ? 6 : 1) {
    nd_ckpt_state s = {.step = step, .adam_t = step};
    nd_ckpt_save(&m, &s, &err);
  }
  mkdir(path_in(cfg->train.save_dir, "step-0"), 0777);
  int removed = -1;
  int rc = nd_checkpoint_prune(cfg->train.save_dir, 3, 2, &removed, &err);
  int left = 0;
  const char *names[] = {"step-0", "step-1", "step-2", "step-3", "step-9"};
  for (int i = 0; i < 5; i++) left |= (access(path_in(cfg->train.save_dir, names[i]), F_OK) == 0) << i;
  ok(rc == 0 && removed == 1 && left == (1 | 4 | 8 | 16), "keep 2 after step 3: step-1 removed, 0, 2, 3, 9 kept (%s)",
     err.msg);
}

int main(void) {
  nd_error err = {0};
  char set[1200];
  if (!mkdtemp(tmpdir) || nd_config_new(&cfg)) return 2;
  snprintf(set, sizeof set, "train.save_dir=%s/ck", tmpdir);
  if (nd_config_set_assignment(cfg, set, &err) || nd_config_set_assignment(cfg, "model.vocab_size=256", &err) ||
      nd_config_set_assignment(cfg, "model.seq_len=64", &err) ||
      nd_config_set_assignment(cfg, "model.n_embd=128", &err))
    return 2;
  char good[1100];
  snprintf(good, sizeof good, "%s/step-3", cfg->train.save_dir);
  test_save_refuses_non_finite();
  test_round_trip(good);
  test_state(good);
  test_config_json(good);
  test_tensors(good);
  nd_config *llama;
  if (nd_config_new(&llama) || nd_config_set_assignment(llama, "model.arch=llama", &err) ||
      nd_config_set_assignment(llama, "model.n_embd=128", &err))
    return 2;
  nd_config *llama3;
  if (nd_config_new(&llama3) || nd_config_set_assignment(llama3, "model.arch=llama", &err) ||
      nd_config_set_assignment(llama3, "model.n_embd=128", &err) ||
      nd_config_set_assignment(llama3, "model.rope_factor=8", &err))
    return 2;
  test_fields(good, llama, llama3);
  nd_config_free(llama);
  nd_config_free(llama3);
  test_unused(good);
  test_longer_positions();
  test_prune();
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) diag("could not remove %s", tmpdir);
  nd_config_free(cfg);
  return done_testing();
}
