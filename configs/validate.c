/* Checks a whole configuration: every key's own range (the struct may have
 * been written directly), then the rules that tie keys together. The first
 * failing rule is reported, at the first of its keys that was given. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "configs/keys.h"

#define PRODUCT_LIMIT (INT64_C(1) << 40)

/* Where to point for a rule over keys (NULL-ended): the first one given,
 * else the section of the first one, else the top of the source. */
static int fail_at(const nd_config *cfg, nd_error *err, const char *const *keys, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_at(const nd_config *cfg, nd_error *err, const char *const *keys, const char *fmt, ...) {
  char msg[ND_ERROR_MAX];
  nd_loc loc = {1, 1, 0};
  int found = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (const char *const *key = keys; *key && !found; key++) {
    nd_loc l = nd__config_loc(cfg, *key);
    if (l.line) loc = l, found = 1;
  }
  for (const char *const *key = keys; *key && !found; key++) {
    const char *dot = strchr(*key, '.');
    int s = nd__section_find(*key, dot ? (size_t)(dot - *key) : strlen(*key));
    if (s >= 0 && cfg->section_loc[s].line) loc = cfg->section_loc[s], found = 1;
  }
  const char *file = loc.from_set ? "--set" : cfg->source[0] ? cfg->source : "<config>";
  return nd__config_error(err, file, loc.line, loc.col, "%s", msg);
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

static int check_ranges(const nd_config *cfg, nd_error *err) {
  char why[ND_ERROR_MAX], name[160];
  for (size_t i = 0; i < nd__n_keys; i++) {
    if (nd__key_check(cfg, &nd__keys[i], why, sizeof why) == 0) continue;
    snprintf(name, sizeof name, "%s.%s", nd__keys[i].section, nd__keys[i].name);
    return fail_at(cfg, err, KEYS(name), "%s", why);
  }
  return 0;
}

/* AdamW keeps its moments and takes its betas and epsilon in single
 * precision: a beta that rounds to 1 there stops a moment (and its bias
 * correction divides by 0), an epsilon that rounds to 0 divides by 0. */
static int check_adam(const nd_config *cfg, nd_error *err) {
  const double beta[2] = {cfg->train.adam_beta1, cfg->train.adam_beta2};
  char shown[32]; /* the value as written: the shortest text that reads back as it */
  for (int i = 0; i < 2; i++)
    if ((float)beta[i] >= 1.0f) {
      nd__format_double(beta[i], shown, sizeof shown);
      return fail_at(cfg, err, KEYS(i ? "train.adam_beta2" : "train.adam_beta1"),
                     "train.adam_beta%d: %s rounds to 1 in single precision, where AdamW computes; at most %.9g", i + 1,
                     shown, (double)nextafterf(1.0f, 0.0f));
    }
  if ((float)cfg->train.adam_epsilon == 0.0f) {
    nd__format_double(cfg->train.adam_epsilon, shown, sizeof shown);
    return fail_at(cfg, err, KEYS("train.adam_epsilon"),
                   "train.adam_epsilon: %s rounds to 0 in single precision, where AdamW computes; at least %.9g", shown,
                   (double)nextafterf(0.0f, 1.0f));
  }
  return 0;
}

/* runtime.tf32: true is the older spelling of train.precision: tf32. It
 * overrides fp32, which the quick start writes out (a file written from it
 * with --set runtime.tf32=true keeps working), but not bf16: the two cannot
 * both hold. bf16 runs only ndgraph's own kernels: a plugin's take fp32
 * descriptors (docs/kernels.md). */
static int check_precision(const nd_config *cfg, nd_error *err) {
  if (cfg->runtime.tf32 && cfg->train.precision == ND_PRECISION_BF16)
    return fail_at(cfg, err, KEYS("train.precision", "runtime.tf32"),
                   "train.precision: bf16 disagrees with runtime.tf32: true (its alias for tf32); give one of them");
  if (cfg->train.precision == ND_PRECISION_BF16 &&
      (cfg->kernels.n_overrides > 0 || strcmp(cfg->model.activation, "gelu") != 0))
    return fail_at(cfg, err, KEYS("train.precision", "kernels.override", "model.activation"),
                   "train.precision: bf16 runs ndgraph's own kernels only: leave kernels.override empty and "
                   "model.activation gelu");
  return 0;
}

/* A key given for an architecture that does not take it. */
static int check_arch(const nd_config *cfg, nd_error *err) {
  char name[160];
  for (size_t i = 0; i < nd__n_keys; i++) {
    const struct nd__key *k = &nd__keys[i];
    if (!k->arch || (k->arch & 1u << cfg->model.arch) || !cfg->loc[i].line) continue;
    snprintf(name, sizeof name, "%s.%s", k->section, k->name);
    return fail_at(cfg, err, KEYS(name), "%s applies to model.arch %s only, not %s", name,
                   k->arch & 1u << ND_ARCH_LLAMA ? "llama" : "gpt2",
                   cfg->model.arch == ND_ARCH_LLAMA ? "llama" : "gpt2");
  }
  return 0;
}

/* Llama: grouped-query attention and the MLP width split by tensor ranks. */
static int check_llama(const nd_config *cfg, nd_error *err) {
  const int64_t head = cfg->model.n_head, kv = nd_config_n_kv_head(cfg);
  const int64_t inter = nd_config_intermediate_size(cfg), tp = cfg->parallelism.tensor_parallel_size;
  if (kv > head || head % kv)
    return fail_at(cfg, err, KEYS("model.n_kv_head", "model.n_head"),
                   "model.n_kv_head (%" PRId64 ") must divide model.n_head (%" PRId64 ")", kv, head);
  if (kv % tp)
    return fail_at(cfg, err, KEYS("parallelism.tensor_parallel_size", "model.n_kv_head"),
                   "parallelism.tensor_parallel_size (%" PRId64 ") must divide model.n_kv_head (%" PRId64
                   "): each tensor rank holds whole key/value heads",
                   tp, kv);
  if (inter % tp)
    return fail_at(cfg, err, KEYS("model.intermediate_size", "parallelism.tensor_parallel_size"),
                   "the MLP width model.intermediate_size (%" PRId64
                   ") must be divisible by parallelism.tensor_parallel_size (%" PRId64 ")",
                   inter, tp);
  if ((cfg->model.n_embd / head) % 2)
    return fail_at(cfg, err, KEYS("model.n_embd", "model.n_head"),
                   "the head size model.n_embd / model.n_head (%" PRId64 ") must be even for rotary embeddings",
                   cfg->model.n_embd / head);
  /* Llama 3's scaling blends the wavelengths between the two bounds */
  if (cfg->model.rope_factor != 1.0 && !(cfg->model.rope_high_freq_factor > cfg->model.rope_low_freq_factor))
    return fail_at(cfg, err, KEYS("model.rope_high_freq_factor", "model.rope_low_freq_factor"),
                   "model.rope_high_freq_factor (%g) must exceed model.rope_low_freq_factor (%g) when "
                   "model.rope_factor is not 1",
                   cfg->model.rope_high_freq_factor, cfg->model.rope_low_freq_factor);
  return 0;
}

static int check_shapes(const nd_config *cfg, nd_error *err) {
  const int64_t embd = cfg->model.n_embd, head = cfg->model.n_head;
  const int64_t tp = cfg->parallelism.tensor_parallel_size;
  if (embd % head)
    return fail_at(cfg, err, KEYS("model.n_embd", "model.n_head"),
                   "model.n_embd (%" PRId64 ") must be divisible by model.n_head (%" PRId64 ")", embd, head);
  if (cfg->model.arch == ND_ARCH_LLAMA) return check_llama(cfg, err);
  /* Before the head rule, which implies it, so that its message can be seen
   * when only the MLP split is wrong. */
  if ((4 * embd) % tp)
    return fail_at(cfg, err, KEYS("model.n_embd", "parallelism.tensor_parallel_size"),
                   "the MLP width 4 * model.n_embd (%" PRId64
                   ") must be divisible by parallelism.tensor_parallel_size (%" PRId64 ")",
                   4 * embd, tp);
  if (head % tp)
    return fail_at(cfg, err, KEYS("model.n_head", "parallelism.tensor_parallel_size"),
                   "model.n_head (%" PRId64 ") must be divisible by parallelism.tensor_parallel_size (%" PRId64 ")",
                   head, tp);
  return 0;
}

static int check_stages(const nd_config *cfg, nd_error *err) {
  const int64_t pp = cfg->parallelism.pipeline_parallel_size, layers = cfg->model.n_layer;
  const int64_t n = cfg->parallelism.n_stage_layers;
  if (n == 0 || cfg->parallelism.stage_layers_auto) {
    if (layers < pp)
      return fail_at(cfg, err, KEYS("model.n_layer", "parallelism.pipeline_parallel_size"),
                     "model.n_layer (%" PRId64 ") must be at least parallelism.pipeline_parallel_size (%" PRId64
                     "): each stage needs a layer",
                     layers, pp);
    return 0;
  }
  if (n != pp)
    return fail_at(cfg, err, KEYS("parallelism.stage_layers", "parallelism.pipeline_parallel_size"),
                   "parallelism.stage_layers has %" PRId64
                   " entries, expected parallelism.pipeline_parallel_size (%" PRId64 ")",
                   n, pp);
  int64_t sum = 0;
  for (int64_t i = 0; i < n; i++) sum += cfg->parallelism.stage_layers[i];
  if (sum != layers)
    return fail_at(cfg, err, KEYS("parallelism.stage_layers", "model.n_layer"),
                   "parallelism.stage_layers add up to %" PRId64 ", expected model.n_layer (%" PRId64 ")", sum, layers);
  return 0;
}

/* A shard group divides the data-parallel group; a size without a shard
 * option would do nothing, so it is refused rather than ignored. */
static int check_dp_shard(const nd_config *cfg, nd_error *err) {
  const int64_t dp = cfg->parallelism.data_parallel_size, size = cfg->parallelism.data_parallel_shard_size;
  const enum nd_dp_shard what = cfg->parallelism.data_parallel_shard;
  /* a bf16 copy is cast once per step from a weight; a gathered buffer holds a different block's weights in turn */
  if (what == ND_DP_SHARD_PARAMETERS && nd_config_precision(cfg) == ND_PRECISION_BF16)
    return fail_at(cfg, err, KEYS("parallelism.data_parallel_shard", "train.precision"),
                   "parallelism.data_parallel_shard: parameters does not work with train.precision bf16 yet");
  if (size == 0) return 0;
  if (what == ND_DP_SHARD_NONE)
    return fail_at(cfg, err, KEYS("parallelism.data_parallel_shard_size", "parallelism.data_parallel_shard"),
                   "parallelism.data_parallel_shard_size (%" PRId64
                   ") needs parallelism.data_parallel_shard other than none",
                   size);
  if (dp % size != 0)
    return fail_at(cfg, err, KEYS("parallelism.data_parallel_shard_size", "parallelism.data_parallel_size"),
                   "parallelism.data_parallel_shard_size (%" PRId64
                   ") must divide parallelism.data_parallel_size (%" PRId64 ")",
                   size, dp);
  return 0;
}

/* Context parallelism cuts each sequence into 2 cp chunks, rank i holding
 * chunks i and 2 cp - 1 - i (graph/ring.c). */
static int check_context(const nd_config *cfg, nd_error *err) {
  const int64_t cp = cfg->parallelism.context_parallel_size, seq = cfg->model.seq_len;
  if (cp == 1) return 0;
  if (seq % (2 * cp))
    return fail_at(cfg, err, KEYS("model.seq_len", "parallelism.context_parallel_size"),
                   "model.seq_len (%" PRId64 ") must be divisible by 2 * parallelism.context_parallel_size (%" PRId64
                   "): each rank holds two equal chunks",
                   seq, 2 * cp);
  return 0;
}

static int check_data(const nd_config *cfg, nd_error *err) {
  const int64_t vocab = cfg->model.vocab_size;
  /* the tokenizer reads the text; its vocabulary is checked against vocab_size when it is read */
  if (cfg->data.tokenizer[0] && cfg->data.format != ND_FORMAT_TEXT)
    return fail_at(cfg, err, KEYS("data.tokenizer", "data.format"),
                   "data.tokenizer reads text files: data.format must be text");
  if (cfg->data.format == ND_FORMAT_TEXT && vocab < 256 && !cfg->data.tokenizer[0])
    return fail_at(cfg, err, KEYS("model.vocab_size", "data.format"),
                   "model.vocab_size (%" PRId64 ") must be at least 256 for data.format text "
                   "(one token per byte)",
                   vocab);
  if (cfg->data.format == ND_FORMAT_TOKENS_U16 && vocab > 65536)
    return fail_at(cfg, err, KEYS("model.vocab_size", "data.format"),
                   "model.vocab_size (%" PRId64 ") must be at most 65536 for data.format tokens-u16", vocab);
  return 0;
}

/* A sample's prompt takes at least one of the model's positions. */
static int check_sample(const nd_config *cfg, nd_error *err) {
  if (cfg->train.sample_every && cfg->train.sample_tokens >= cfg->model.seq_len)
    return fail_at(cfg, err, KEYS("train.sample_tokens", "model.seq_len"),
                   "train.sample_tokens (%" PRId64 ") must be below model.seq_len (%" PRId64
                   "): the sample's prompt takes a position",
                   cfg->train.sample_tokens, cfg->model.seq_len);
  return 0;
}

static int check_trace(const nd_config *cfg, nd_error *err) {
  for (int64_t i = 0; i < cfg->trace.n_steps; i++) {
    if (cfg->trace.steps[i] > cfg->train.steps)
      return fail_at(cfg, err, KEYS("trace.steps", "train.steps"),
                     "trace.steps entry %" PRId64 " is outside 1..train.steps (%" PRId64 ")", cfg->trace.steps[i],
                     cfg->train.steps);
  }
  return 0;
}

/* The ranges of single keys keep these products inside int64_t; the limit
 * keeps the buffers the runtime sizes from them reasonable. */
static int check_products(const nd_config *cfg, nd_error *err) {
  const int64_t mbs = cfg->train.micro_batch_size, seq = cfg->model.seq_len;
  const int64_t embd = cfg->model.n_embd, vocab = cfg->model.vocab_size;
  const int64_t head = cfg->model.n_head, layers = cfg->model.n_layer;
  const int64_t widest = 4 * embd > vocab ? 4 * embd : vocab;
  if (mbs * seq * widest >= PRODUCT_LIMIT)
    return fail_at(cfg, err, KEYS("train.micro_batch_size", "model.seq_len", "model.n_embd", "model.vocab_size"),
                   "train.micro_batch_size * model.seq_len * max(4 * model.n_embd, "
                   "model.vocab_size) = %" PRId64 " must be below 2^40",
                   mbs * seq * widest);
  if (mbs * head * seq * seq >= PRODUCT_LIMIT)
    return fail_at(cfg, err, KEYS("train.micro_batch_size", "model.n_head", "model.seq_len"),
                   "train.micro_batch_size * model.n_head * model.seq_len^2 = %" PRId64 " must be below 2^40",
                   mbs * head * seq * seq);
  /* every rank has its own tensors and tasks: the graph grows with the
   * product, so it is bounded as a whole, not only size by size */
  const int64_t ranks = cfg->parallelism.data_parallel_size * cfg->parallelism.tensor_parallel_size *
                        cfg->parallelism.pipeline_parallel_size * cfg->parallelism.context_parallel_size;
  if (ranks > ND_MAX_RANKS)
    return fail_at(cfg, err,
                   KEYS("parallelism.data_parallel_size", "parallelism.tensor_parallel_size",
                        "parallelism.pipeline_parallel_size", "parallelism.context_parallel_size"),
                   "parallelism.data_parallel_size * tensor_parallel_size * pipeline_parallel_size * "
                   "context_parallel_size = %" PRId64
                   " ranks, at most %d",
                   ranks, ND_MAX_RANKS);
  /* a step's tasks: about 30 per layer, micro-batch and rank of a stage;
   * 2^20 layer passes build in some 30 s and 6 GB, more only takes longer */
  const int64_t passes = cfg->parallelism.data_parallel_size * cfg->parallelism.tensor_parallel_size *
                         cfg->parallelism.context_parallel_size * cfg->parallelism.micro_batches * layers;
  if (passes > ND_MAX_LAYER_PASSES)
    return fail_at(cfg, err,
                   KEYS("parallelism.micro_batches", "model.n_layer", "parallelism.data_parallel_size",
                        "parallelism.tensor_parallel_size", "parallelism.context_parallel_size"),
                   "parallelism.micro_batches * model.n_layer * data_parallel_size * tensor_parallel_size * "
                   "context_parallel_size = %" PRId64
                   " layer passes a step, at most 2^20 (the step's graph would hold tens of millions of tasks)",
                   passes);
  const int64_t params = 12 * layers * embd * embd + vocab * embd;
  if (params >= PRODUCT_LIMIT)
    return fail_at(cfg, err, KEYS("model.n_layer", "model.n_embd", "model.vocab_size"),
                   "the model size 12 * model.n_layer * model.n_embd^2 + model.vocab_size * "
                   "model.n_embd = %" PRId64 " must be below 2^40",
                   params);
  return 0;
}

int nd_config_validate(const nd_config *cfg, nd_error *err) {
  int rc;
  if (!cfg) return nd__fail(err, ND_EINVAL, "error: no configuration");
  if ((rc = check_ranges(cfg, err)) < 0) return rc;
  if ((rc = check_adam(cfg, err)) < 0) return rc;
  if ((rc = check_arch(cfg, err)) < 0) return rc;
  if ((rc = check_precision(cfg, err)) < 0) return rc;
  if ((rc = check_shapes(cfg, err)) < 0) return rc;
  if ((rc = check_stages(cfg, err)) < 0) return rc;
  if ((rc = check_context(cfg, err)) < 0) return rc;
  if ((rc = check_data(cfg, err)) < 0) return rc;
  if ((rc = check_trace(cfg, err)) < 0) return rc;
  if ((rc = check_dp_shard(cfg, err)) < 0) return rc;
  if ((rc = check_sample(cfg, err)) < 0) return rc;
  if ((rc = check_products(cfg, err)) < 0) return rc;
  return 0;
}
