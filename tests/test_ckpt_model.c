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

/* wte.weight (4, 2) and ln_f.bias (2): values k + i / 10, and the kind that
 * holds a NaN (-1: none) */
static const nd_ckpt_tensor tensors[] = {{"wte.weight", 2, {4, 2}, 8}, {"ln_f.bias", 1, {2, 0}, 2}};
static int nan_in = -1;
static float loaded[3][8];

static int gather(void *user, int k, enum nd_gather what, float *out) {
  (void)user;
  for (int64_t i = 0; i < tensors[k].numel; i++) out[i] = (float)(k + (double)i / 10);
  if ((int)what == nan_in && k == 1) out[1] = NAN;
  return 0;
}

static void scatter(void *user, int k, enum nd_gather what, const float *in) {
  (void)user, (void)what;
  memcpy(loaded[k], in, (size_t)tensors[k].numel * sizeof *in);
}

static nd_config *cfg;

static nd_ckpt_model model(void) { return (nd_ckpt_model){cfg, tensors, 2, gather, scatter, NULL, 0}; }

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

/* Loading dir fails with a message containing each of the (NULL-ended) parts. */
static void expect_refused(const char *what, const char *dir, int with_state, const char *const *parts) {
  nd_ckpt_model m = model();
  nd_ckpt_state s;
  nd_error err = {0};
  int rc = nd_ckpt_load(&m, dir, with_state, &s, &err), all = rc == ND_ECHECKPOINT;
  for (int i = 0; parts[i]; i++) all &= strstr(err.msg, parts[i]) != NULL;
  ok(all, "%s: %s", what, err.msg);
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
  test_prune();
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) diag("could not remove %s", tmpdir);
  nd_config_free(cfg);
  return done_testing();
}
