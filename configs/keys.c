/* The one description of every configuration key. Loading, --set, get, dump,
 * range checks and suggestions are all driven from nd__keys; docs/config.md
 * explains the same keys for people. */
#include "configs/keys.h"
#include "configs/policies.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define OFF(field)   offsetof(struct nd_config, field)
#define SIZE(field)  sizeof(((struct nd_config *)0)->field)
#define ITEM(field)  sizeof(((struct nd_config *)0)->field[0])
#define COUNT(field) (sizeof(((struct nd_config *)0)->field) / ITEM(field))

/* The fields of a key of each type; INT(...) etc. are whole keys. */
#define INT_(sec, key, lo, hi, dflt) \
  .section = #sec, .name = #key, .type = ND__T_INT, .off = OFF(sec.key), .min = (lo), .max = (hi), .def = dflt
#define FLOAT_(sec, key, lo, lo_open, hi, hi_open, dflt)                                                         \
  .section = #sec, .name = #key, .type = ND__T_FLOAT, .off = OFF(sec.key), .fmin = (lo), .fmin_open = (lo_open), \
  .fmax = (hi), .fmax_open = (hi_open), .def = dflt
#define BOOL_(sec, key, dflt) .section = #sec, .name = #key, .type = ND__T_BOOL, .off = OFF(sec.key), .def = dflt
#define STR_(sec, key, least, allowed, dflt)                                                                    \
  .section = #sec, .name = #key, .type = ND__T_STR, .off = OFF(sec.key), .size = SIZE(sec.key), .min = (least), \
  .names = (allowed), .def = dflt
#define INT(...) \
  { INT_(__VA_ARGS__) }
#define FLOAT(...) \
  { FLOAT_(__VA_ARGS__) }
#define BOOL(...) \
  { BOOL_(__VA_ARGS__) }
#define STR(...) \
  { STR_(__VA_ARGS__) }
/* A key that only architecture `a` (model.arch) takes: ONLY(LLAMA, INT_, ...). */
#define ONLY(a, type, ...) \
  { .arch = 1u << ND_ARCH_##a, type(__VA_ARGS__) }
#define ENUM(sec, key, allowed, dflt) \
  { .section = #sec, .name = #key, .type = ND__T_ENUM, .off = OFF(sec.key), .names = (allowed), .def = dflt }
#define LIST(sec, key, t, field, count, lo, hi)                                                     \
  {                                                                                                 \
    .section = #sec, .name = #key, .type = (t), .off = OFF(sec.field), .count_off = OFF(sec.count), \
    .size = ITEM(sec.field), .max_items = COUNT(sec.field), .min = (lo), .max = (hi)                \
  }

#define BILLION  INT64_C(1000000000)
#define TEXT_(x) #x
#define TEXT(x)  TEXT_(x) /* a number's default as the table writes it */

static const struct nd__name formats[] = {
    {"text", ND_FORMAT_TEXT}, {"tokens-u16", ND_FORMAT_TOKENS_U16}, {"tokens-u32", ND_FORMAT_TOKENS_U32}, {NULL, 0}};
static const struct nd__name archs[] = {{"gpt2", ND_ARCH_GPT2}, {"llama", ND_ARCH_LLAMA}, {NULL, 0}};
static const struct nd__name placements[] = {
    {"strict", ND_PLACEMENT_STRICT}, {"affinity", ND_PLACEMENT_AFFINITY}, {"free", ND_PLACEMENT_FREE}, {NULL, 0}};
static const struct nd__name priority_orders[] = {
    {"pipeline", ND_PRIORITY_PIPELINE}, {"critical-path", ND_PRIORITY_CRITICAL_PATH}, {NULL, 0}};
static const struct nd__name wait_policies[] = {{"auto", ND_WAIT_AUTO},
                                                {"active", ND_WAIT_ACTIVE},
                                                {"passive", ND_WAIT_PASSIVE},
                                                {"help", ND_WAIT_HELP},
                                                {NULL, 0}};
static const struct nd__name recomputes[] = {
    {"none", ND_RECOMPUTE_NONE}, {"attention", ND_RECOMPUTE_ATTENTION}, {"layer", ND_RECOMPUTE_LAYER}, {NULL, 0}};
static const struct nd__name precisions[] = {
    {"fp32", ND_PRECISION_FP32}, {"tf32", ND_PRECISION_TF32}, {"bf16", ND_PRECISION_BF16}, {NULL, 0}};
static const struct nd__name dp_shards[] = {{"none", ND_DP_SHARD_NONE},
                                            {"optimizer", ND_DP_SHARD_OPTIMIZER},
                                            {"gradients", ND_DP_SHARD_GRADIENTS},
                                            {"parameters", ND_DP_SHARD_PARAMETERS},
                                            {NULL, 0}};
static const struct nd__name all_devices[] = {{"all", -1}, {NULL, 0}};

const char *const nd__sections[] = {"model", "parallelism", "train", "data", "runtime", "trace", "log", "kernels"};
const size_t nd__n_sections = sizeof nd__sections / sizeof nd__sections[0];

/* Bounds keep every product the runtime forms (elements of a tensor, bytes of
 * a buffer) inside int64_t; validate.c checks the products themselves. */
const struct nd__key nd__keys[] = {
    ENUM(model, arch, archs, "gpt2"),
    INT(model, vocab_size, 1, INT64_C(1) << 20, "256"),
    INT(model, n_layer, 1, 1024, "4"),
    INT(model, n_head, 1, 1024, "4"),
    INT(model, n_embd, 1, INT64_C(1) << 16, "128"),
    INT(model, seq_len, 1, INT64_C(1) << 16, "64"),
    ONLY(GPT2, STR_, model, activation, 1, NULL, "gelu"),
    ONLY(LLAMA, INT_, model, n_kv_head, 0, 1024, "0"),
    ONLY(LLAMA, INT_, model, intermediate_size, 0, INT64_C(1) << 18, "0"),
    ONLY(LLAMA, FLOAT_, model, rms_norm_eps, 0.0, 1, 1.0, 0, "1e-5"),
    ONLY(LLAMA, FLOAT_, model, rope_theta, 1.0, 0, 1e12, 0, "10000"),
    ONLY(LLAMA, FLOAT_, model, rope_factor, 1.0, 0, 1e6, 0, "1"),
    ONLY(LLAMA, FLOAT_, model, rope_low_freq_factor, 0.0, 1, 1e6, 0, "1"),
    ONLY(LLAMA, FLOAT_, model, rope_high_freq_factor, 0.0, 1, 1e6, 0, "4"),
    ONLY(LLAMA, INT_, model, rope_original_context, 1, INT64_C(1) << 24, "8192"),
    ONLY(LLAMA, BOOL_, model, tie_word_embeddings, "false"),

    INT(parallelism, data_parallel_size, 1, 1024, "1"),
    INT(parallelism, tensor_parallel_size, 1, 1024, "1"),
    INT(parallelism, pipeline_parallel_size, 1, ND_MAX_STAGES, "2"),
    INT(parallelism, context_parallel_size, 1, ND_MAX_CONTEXT, "1"),
    INT(parallelism, micro_batches, 1, INT64_C(1) << 16, "4"),
    INT(parallelism, activation_slots, 1, INT64_C(1) << 16, "2"),
    {.section = "parallelism",
     .name = "stage_layers",
     .type = ND__T_INTS,
     .off = OFF(parallelism.stage_layers),
     .count_off = OFF(parallelism.n_stage_layers),
     .size = ITEM(parallelism.stage_layers),
     .max_items = COUNT(parallelism.stage_layers),
     .min = 1,
     .max = 1024,
     .keyword = "auto",
     .keyword_off = OFF(parallelism.stage_layers_auto)},
    /* "auto" is a C keyword: the field has another name */
    {.section = "parallelism", .name = "auto", .type = ND__T_BOOL, .off = OFF(parallelism.plan_auto), .def = "false"},
    ENUM(parallelism, data_parallel_shard, dp_shards, "none"),
    INT(parallelism, data_parallel_shard_size, 0, 1024, "0"),

    INT(train, steps, 1, BILLION, "300"),
    INT(train, micro_batch_size, 1, INT64_C(1) << 16, "4"),
    FLOAT(train, lr, 0.0, 1, 10.0, 0, "3e-3"),
    INT(train, warmup_steps, 0, BILLION, "20"),
    FLOAT(train, weight_decay, 0.0, 0, 10.0, 0, "0.1"),
    /* AdamW, named as Hugging Face's TrainingArguments: a beta of 1 makes the
     * bias correction 1 / (1 - beta^t) divide by 0, an epsilon of 0 leaves
     * 0 / 0 where a gradient has always been 0 */
    FLOAT(train, adam_beta1, 0.0, 0, 1.0, 1, "0.9"),
    FLOAT(train, adam_beta2, 0.0, 0, 1.0, 1, "0.95"),
    FLOAT(train, adam_epsilon, 0.0, 1, 1.0, 0, "1e-8"),
    FLOAT(train, grad_clip, 0.0, 0, 1e6, 0, "1.0"),
    {.section = "train", .name = "seed", .type = ND__T_U64, .off = OFF(train.seed), .def = "1337"},
    INT(train, eval_every, 0, BILLION, "50"),
    INT(train, eval_batches, 1, INT64_C(1) << 16, "8"),
    INT(train, save_every, 0, BILLION, "0"),
    STR(train, save_dir, 0, NULL, "runs/quickstart"),
    INT(train, keep_checkpoints, 0, BILLION, "0"),
    ENUM(train, recompute, recomputes, "none"),
    ENUM(train, precision, precisions, "fp32"),
    INT(train, sample_every, 0, BILLION, "0"),
    INT(train, sample_tokens, 1, INT64_C(1) << 16, "32"),

    STR(data, train, 1, NULL, "builtin:tales"),
    STR(data, val, 1, NULL, "builtin:tales-val"),
    ENUM(data, format, formats, "text"),
    STR(data, tokenizer, 0, NULL, ""),

    INT(runtime, workers, 0, 4096, "0"),
    STR(runtime, scheduler, 1, nd__policy_names, "ndws"),
    BOOL(runtime, deterministic, "true"),
    BOOL(runtime, tune, "true"),
    BOOL(runtime, chain_tasks, "true"),
    ENUM(runtime, placement, placements, "affinity"),
    ENUM(runtime, priorities, priority_orders, "pipeline"),
    ENUM(runtime, wait_policy, wait_policies, "auto"),
    STR(runtime, topology, 0, NULL, ""),
    /* runtime.devices, by kind: a key per device backend */
    {.section = "runtime",
     .name = "opencl_devices",
     .type = ND__T_INT,
     .off = OFF(runtime.devices[ND_BACKEND_OPENCL]),
     .min = 0,
     .max = 64,
     .def = "0"},
    {.section = "runtime",
     .name = "cuda_devices",
     .type = ND__T_INT,
     .off = OFF(runtime.devices[ND_BACKEND_CUDA]),
     .min = 0,
     .max = 64,
     .names = all_devices,
     .def = "0"},
    BOOL(runtime, tf32, "false"),
    BOOL(runtime, allow_oversubscribe, "false"),
    BOOL(runtime, split_tensor_groups, "false"),
    INT(runtime, device_memory, 0, INT64_C(1) << 30, "0"),

    STR(trace, path, 0, NULL, ""),
    LIST(trace, steps, ND__T_INTS, steps, n_steps, 1, BILLION),
    BOOL(trace, flows, "true"),
    STR(trace, svg, 0, NULL, ""),

    STR(log, metrics, 0, NULL, ""),
    INT(log, every, 1, BILLION, "10"),

    LIST(kernels, plugins, ND__T_STRS, plugins, n_plugins, 1, 0),
    LIST(kernels, override, ND__T_PAIRS, overrides, n_overrides, 0, 0),
    INT(kernels, probe_timeout, 1, 86400, TEXT(ND_PROBE_TIMEOUT_S)),
};
const size_t nd__n_keys = sizeof nd__keys / sizeof nd__keys[0];

_Static_assert(sizeof nd__keys / sizeof nd__keys[0] <= sizeof((struct nd_config *)0)->loc / sizeof(nd_loc),
               "nd_config.loc must have a slot per key");
_Static_assert(sizeof nd__sections / sizeof nd__sections[0] <= ND_MAX_SECTIONS,
               "nd_config.section_loc must have a slot per section");

static int same(const char *a, size_t an, const char *b) { return strlen(b) == an && memcmp(a, b, an) == 0; }

int nd__section_find(const char *name, size_t len) {
  for (size_t i = 0; i < nd__n_sections; i++)
    if (same(name, len, nd__sections[i])) return (int)i;
  return -1;
}

int nd__key_find(const char *section, size_t slen, const char *name, size_t nlen) {
  for (size_t i = 0; i < nd__n_keys; i++)
    if (same(section, slen, nd__keys[i].section) && same(name, nlen, nd__keys[i].name)) return (int)i;
  return -1;
}

int nd__key_find_dotted(const char *dotted, size_t len) {
  const char *dot = memchr(dotted, '.', len);
  if (!dot) return -1;
  size_t slen = (size_t)(dot - dotted);
  return nd__key_find(dotted, slen, dot + 1, len - slen - 1);
}

int nd__key_is_composite(const struct nd__key *k) {
  return k->type == ND__T_INTS || k->type == ND__T_STRS || k->type == ND__T_PAIRS;
}

/* Close enough to be a typo: a quarter of the word, at least one edit. */
static size_t close_enough(size_t len) {
  size_t d = 1 + len / 4;
  return d > 3 ? 3 : d;
}

const char *nd__suggest_section(const char *name, size_t len) {
  const char *best = NULL;
  size_t best_d = close_enough(len) + 1;
  for (size_t i = 0; i < nd__n_sections; i++) {
    size_t d = nd__edit_distance(name, len, nd__sections[i], strlen(nd__sections[i]));
    if (d < best_d) best = nd__sections[i], best_d = d;
  }
  return best;
}

void nd__suggest_key(const char *section, size_t slen, const char *name, size_t nlen, char *out, size_t size) {
  const struct nd__key *best = NULL;
  size_t best_d = close_enough(nlen) + 1;
  /* A near miss in the section written wins; otherwise the exact name filed
   * under another section ("model.steps" -> "train.steps"). */
  for (size_t i = 0; i < nd__n_keys; i++) {
    const struct nd__key *k = &nd__keys[i];
    if (!same(section, slen, k->section)) continue;
    size_t d = nd__edit_distance(name, nlen, k->name, strlen(k->name));
    if (d < best_d) best = k, best_d = d;
  }
  if (!best) {
    for (size_t i = 0; i < nd__n_keys && !best; i++)
      if (same(name, nlen, nd__keys[i].name)) best = &nd__keys[i];
  }
  if (!best && nd__section_find(section, slen) < 0) {
    const char *sec = nd__suggest_section(section, slen);
    if (sec) {
      int i = nd__key_find(sec, strlen(sec), name, nlen);
      if (i >= 0) best = &nd__keys[i];
    }
  }
  if (size) out[0] = '\0';
  if (best) snprintf(out, size, "%s.%s", best->section, best->name);
}
