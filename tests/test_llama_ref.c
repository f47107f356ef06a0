/* The Llama kernels, as the graph composes them, against a double-precision
 * forward (tests/ref/llama.c, written from Hugging Face's LlamaForCausalLM):
 * weights chosen here, written as a Hugging Face model.safetensors and
 * loaded, give ndgraph's evaluation loss within 1e-5 relative of the
 * reference's. Float against fp64 over 2 layers of width 32 to 48 and a
 * 256-way softmax: the measured difference is ~1e-7, so 1e-5 leaves two
 * orders of magnitude for rounding.
 * The weights make each part of the model matter: gate and up projections
 * of different scales (silu(gate) * up is not symmetric), query and key
 * weights large enough for peaked attention (rotary embeddings and the head
 * a query reads decide the loss), norm weights that differ per channel.
 * The reference is also run with gate and up swapped, and with the key/value
 * heads reversed among the groups, to show each such bug moves the loss by
 * more than 100 times the tolerance. */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/safetensors.h"
#include "tests/ref/llama.h"
#include "tests/ref/ref.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define L   2
#define C   32
#define NH  4
#define KV  2
#define I   48
#define V   256
#define T   16
#define TOL 1e-5

static const char *const llama[] = {"model.arch=llama",
                                    "model.n_layer=2",
                                    "model.n_embd=32",
                                    "model.n_head=4",
                                    "model.n_kv_head=2",
                                    "model.intermediate_size=48",
                                    "model.seq_len=16",
                                    "model.vocab_size=256",
                                    "model.rope_theta=10000",
                                    "model.rms_norm_eps=1e-5",
                                    "train.micro_batch_size=1",
                                    "parallelism.data_parallel_size=1",
                                    "parallelism.micro_batches=1",
                                    "parallelism.pipeline_parallel_size=1",
                                    "parallelism.tensor_parallel_size=1",
                                    "parallelism.activation_slots=1",
                                    NULL};

static int ends(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcmp(s + n - m, tail);
}

/* the range the weights of a tensor are drawn from */
static void range(const char *name, double *lo, double *hi) {
  static const struct {
    const char *tail;
    double lo, hi;
  } r[] = {{"layernorm.weight", 0.5, 1.5},  {"model.norm.weight", 0.5, 1.5}, {"q_proj.weight", -0.6, 0.6},
           {"k_proj.weight", -0.6, 0.6},    {"gate_proj.weight", -0.8, 0.8}, {"up_proj.weight", -0.1, 0.1},
           {"down_proj.weight", -0.6, 0.6}, {"embed_tokens.weight", -1, 1}};
  *lo = -0.3, *hi = 0.3;
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
    if (ends(name, r[i].tail)) *lo = r[i].lo, *hi = r[i].hi;
}

static const double *find(char names[][64], double **w, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return w[i];
  return NULL;
}

int main(void) {
  char dir[64], st_path[96], data[96];
  snprintf(dir, sizeof dir, "/tmp/nd-llama-ref-%d", (int)getpid());
  snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
  snprintf(data, sizeof data, "%s/tokens.txt", dir);
  mkdir(dir, 0700);
  static const char text[] = "Once upon a time, a small llama"; /* T + 1 tokens and more */
  FILE *f = fopen(data, "w");
  if (!f || fwrite(text, 1, T + 1, f) != T + 1 || fclose(f)) return ok(0, "data file %s", data), done_testing();

  nd_config *cfg = tiny_config(llama);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  if (!ok(cfg && nd_trainer_open(&tr, cfg, &err) == 0, "a 2-layer Llama opens %s", err.msg)) return done_testing();
  enum { MAXT = 64 };
  char names[MAXT][64];
  double *w[MAXT] = {NULL};
  float *fw[MAXT] = {NULL};
  nd_st_tensor st[MAXT];
  nd_ref_rng rng;
  nd_ref_rng_seed(&rng, 61);
  int n = 0;
  long long numel;
  for (const char *name; n < MAXT && (name = nd_trainer_tensor_name(tr, n, &numel)); n++) {
    snprintf(names[n], sizeof names[n], "%s", name);
    double lo, hi;
    range(name, &lo, &hi);
    fw[n] = malloc((size_t)numel * sizeof(float));
    w[n] = malloc((size_t)numel * sizeof(double));
    nd_ref_fill(fw[n], numel, &rng, lo, hi);
    nd_ref_to_double(w[n], fw[n], numel);
    long long in = ends(name, "down_proj.weight") ? I : C;
    int vec = ends(name, "norm.weight");
    st[n] = (nd_st_tensor){names[n], vec ? 1 : 2, {vec ? numel : numel / in, vec ? 0 : in}, fw[n]};
  }
  double got = NAN;
  long long tokens = 0;
  int rc = nd_safetensors_write(st_path, st, n, &err);
  if (!rc) rc = nd_trainer_load(tr, dir, 0, &err);
  if (!rc) rc = nd_trainer_eval(tr, data, 1, &got, &tokens, &err);
  ok(rc == 0 && tokens == T, "ndgraph loads the weights and evaluates %lld tokens %s", tokens, rc ? err.msg : "");

  nd_ref_llama_layer layers[L];
  for (int l = 0; l < L; l++) {
    char p[16][96];
    static const char *const part[] = {"input_layernorm",  "self_attn.q_proj", "self_attn.k_proj",
                                       "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
                                       "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
    const double *t[9];
    for (int j = 0; j < 9; j++) {
      snprintf(p[j], sizeof p[j], "model.layers.%d.%s.weight", l, part[j]);
      t[j] = find(names, w, n, p[j]);
    }
    layers[l] = (nd_ref_llama_layer){t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8]};
  }
  nd_ref_llama m = {V,
                    C,
                    L,
                    NH,
                    KV,
                    I,
                    1e-5,
                    10000,
                    find(names, w, n, "model.embed_tokens.weight"),
                    find(names, w, n, "model.norm.weight"),
                    find(names, w, n, "lm_head.weight"),
                    layers};
  int32_t tok[T + 1];
  for (int t = 0; t <= T; t++) tok[t] = (unsigned char)text[t];
  double want = nd_ref_llama_loss(&m, tok, T), e = fabs(got - want) / want;
  ok(e < TOL, "loss %.9f against the fp64 reference's %.9f: %.2e relative (need %.0e)", got, want, e, TOL);

  /* the same reference with a planted bug: how far each one moves the loss */
  nd_ref_llama_layer swapped[L];
  for (int l = 0; l < L; l++) swapped[l] = layers[l], swapped[l].gate = layers[l].up, swapped[l].up = layers[l].gate;
  nd_ref_llama ms = m;
  ms.layers = swapped;
  double es = fabs(nd_ref_llama_loss(&ms, tok, T) - want) / want;
  ok(es > 100 * TOL, "gate and up swapped would be %.2e off, %.0f times the tolerance", es, es / TOL);
  /* key/value heads reversed: query head h reading group KV - 1 - h / (NH / KV) */
  double *krev[L], *vrev[L];
  for (int l = 0; l < L; l++) {
    krev[l] = malloc(sizeof(double) * KV * (C / NH) * C), vrev[l] = malloc(sizeof(double) * KV * (C / NH) * C);
    size_t rows = (size_t)(C / NH) * C;
    for (int g = 0; g < KV; g++) {
      memcpy(krev[l] + g * rows, layers[l].k + (KV - 1 - g) * rows, rows * sizeof(double));
      memcpy(vrev[l] + g * rows, layers[l].v + (KV - 1 - g) * rows, rows * sizeof(double));
    }
    swapped[l] = layers[l], swapped[l].k = krev[l], swapped[l].v = vrev[l];
  }
  double eg = fabs(nd_ref_llama_loss(&ms, tok, T) - want) / want;
  ok(eg > 100 * TOL, "key/value groups reversed would be %.2e off, %.0f times the tolerance", eg, eg / TOL);

  for (int l = 0; l < L; l++) free(krev[l]), free(vrev[l]);
  for (int i = 0; i < n; i++) free(w[i]), free(fw[i]);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  unlink(st_path);
  unlink(data);
  rmdir(dir);
  return done_testing();
}
