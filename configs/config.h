/* The validated configuration as the rest of ndgraph reads it.
 * Internal: the public API (include/ndgraph/ndgraph.h) keeps it opaque. */
#ifndef ND_CONFIGS_CONFIG_H
#define ND_CONFIGS_CONFIG_H

#include <stdint.h>
#include "ndgraph/ndgraph.h"

#define ND_MAX_STAGES       64
#define ND_MAX_CONTEXT      64 /* parallelism.context_parallel_size */
#define ND_MAX_RANKS        4096      /* data x tensor x pipeline */
#define ND_MAX_LAYER_PASSES (1 << 20) /* data x tensor x micro-batches x layers: the step graph's size */
#define ND_MAX_TRACE_STEPS  64
#define ND_MAX_PLUGINS      16
#define ND_PATH_MAX         1024
#define ND_NAME_MAX         64
#define ND_MAX_OVERRIDES    16
#define ND_MAX_SECTIONS     16
/* kernels.probe_timeout's default, and kernel-check's: the seconds one call
 * of a plugin (its init, a kernel) may take in the start-up probe */
#define ND_PROBE_TIMEOUT_S  30

enum nd_data_format { ND_FORMAT_TEXT, ND_FORMAT_TOKENS_U16, ND_FORMAT_TOKENS_U32 };
enum nd_arch { ND_ARCH_GPT2, ND_ARCH_LLAMA };
/* train.recompute: what the backward computes again instead of keeping (docs/memory.md) */
enum nd_recompute { ND_RECOMPUTE_NONE, ND_RECOMPUTE_ATTENTION, ND_RECOMPUTE_LAYER };
enum nd_placement { ND_PLACEMENT_AFFINITY, ND_PLACEMENT_STRICT, ND_PLACEMENT_FREE };
/* How task priorities order ready tasks (graph/priority.c). */
enum nd_priority_order { ND_PRIORITY_PIPELINE, ND_PRIORITY_CRITICAL_PATH };
/* What an idle worker of ndgraph's policies does while a step runs: poll
 * (active), poll and take row blocks of another worker's kernel (help,
 * common/share.h), sleep after about a millisecond (passive), or the
 * runtime's choice (scheduler/idle.h, nd_idle_wait_policy). */
enum nd_wait_policy { ND_WAIT_AUTO, ND_WAIT_ACTIVE, ND_WAIT_PASSIVE, ND_WAIT_HELP };
/* train.precision: how GEMMs round their inputs (docs/precision.md). */
enum nd_precision { ND_PRECISION_FP32, ND_PRECISION_TF32, ND_PRECISION_BF16 };
/* What the data-parallel group shards (parallelism.data_parallel_shard; ZeRO
 * stages 1, 2, 3): nothing, AdamW's moments, also the gradients, also the
 * parameters. */
enum nd_dp_shard { ND_DP_SHARD_NONE, ND_DP_SHARD_OPTIMIZER, ND_DP_SHARD_GRADIENTS, ND_DP_SHARD_PARAMETERS };

/* Where a key was given (1-based), so that cross-key errors can point at it.
 * line == 0: the key kept its default. from_set: the key came from --set, so
 * the position is a column of that assignment ("--set:1:COL"), not of the file
 * named in nd_config.source. */
typedef struct nd_loc {
  int line, col;
  int from_set;
} nd_loc;

/* kernels.override: use the implementation NAME for kernels of KIND. */
struct nd_kernel_override {
  char kind[ND_NAME_MAX];
  char name[ND_NAME_MAX];
};

struct nd_config {
  char source[ND_PATH_MAX];      /* file the values came from, for messages */
  int from_set;                  /* some value came from --set */
  char origin[ND_PATH_MAX + 32]; /* the whole configuration's, for messages: nd__config_origin(cfg, NULL) */

  struct {
    enum nd_arch arch;
    int64_t vocab_size, n_layer, n_head, n_embd, seq_len;
    char activation[ND_NAME_MAX]; /* gpt2: "gelu" unless a plugin adds one */
    /* llama (docs/models.md): 0 means the default rule (nd_config_n_kv_head,
     * nd_config_intermediate_size) */
    int64_t n_kv_head, intermediate_size;
    double rms_norm_eps, rope_theta;
    /* Llama 3's RoPE scaling (Hugging Face's rope_type llama3); factor 1: none */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int64_t rope_original_context;
    int tie_word_embeddings;
  } model;

  struct {
    int64_t data_parallel_size, tensor_parallel_size, pipeline_parallel_size;
    int64_t context_parallel_size; /* each sequence split over this many ranks (docs/context-parallel.md) */
    int64_t micro_batches;    /* per step, per data-parallel replica */
    int64_t activation_slots; /* in-flight micro-batches per pipeline stage */
    int stage_layers_auto;    /* stage_layers: auto */
    int64_t n_stage_layers;   /* 0: split evenly */
    int64_t stage_layers[ND_MAX_STAGES];
    int plan_auto; /* parallelism.auto: run takes the best plan of `plan --auto` */
    enum nd_dp_shard data_parallel_shard;
    int64_t data_parallel_shard_size; /* ranks a shard group holds; 0: the whole data-parallel group */
  } parallelism;

  struct {
    int64_t steps, micro_batch_size;
    double lr;
    int64_t warmup_steps;
    double weight_decay;
    double adam_beta1, adam_beta2, adam_epsilon; /* AdamW's moment decays and denominator term */
    double grad_clip;                            /* 0: no clipping */
    uint64_t seed;
    int64_t eval_every, eval_batches; /* eval_every 0: never */
    int64_t save_every;               /* 0: only at the end */
    char save_dir[ND_PATH_MAX];       /* empty: no checkpoints */
    int64_t keep_checkpoints;         /* the newest N complete ones; 0: all */
    enum nd_recompute recompute;
    enum nd_precision precision;      /* read through nd_config_precision: runtime.tf32 is its alias */
    int64_t sample_every, sample_tokens; /* a greedy sample every N steps (0: never), of that many ids */
  } train;

  struct {
    char train[ND_PATH_MAX], val[ND_PATH_MAX]; /* paths or builtin:NAME */
    enum nd_data_format format;
    char tokenizer[ND_PATH_MAX]; /* a tokenizer.json the text goes through; empty: bytes are tokens */
  } data;

  struct {
    int64_t workers; /* 0: all cores, capped by StarPU */
    char scheduler[ND_NAME_MAX];
    int deterministic;
    int chain_tasks; /* a layer's F, B, W or AdamW tasks of a rank: one StarPU task (tasks/chain.h) */
    int tune;        /* the tuning pass before the first step (train/tune.c) */
    enum nd_placement placement;
    enum nd_priority_order priorities;
    enum nd_wait_policy wait_policy;
    char topology[ND_PATH_MAX]; /* hwloc XML, empty: this machine */
    /* runtime.NAME_devices by device kind (common/device.h): how many of
     * each device to start, -1: all there are; [ND_BACKEND_CPU] unused */
    int64_t devices[ND_BACKEND_COUNT];
    int tf32;                /* alias of train.precision: tf32 (nd_config_precision) */
    int allow_oversubscribe; /* start even when the plan needs more memory than a device has */
    int split_tensor_groups; /* mpirun: ranks, not (replica, stage) pairs, dealt to processes */
    int64_t device_memory;   /* MiB a rank may hold where the planner chooses the layout; 0: the devices' own */
  } runtime;

  struct {
    char path[ND_PATH_MAX]; /* empty: no trace */
    int64_t n_steps;
    int64_t steps[ND_MAX_TRACE_STEPS];
    int flows;
    char svg[ND_PATH_MAX];
  } trace;

  struct {
    char metrics[ND_PATH_MAX]; /* JSON Lines; empty: none */
    int64_t every;
  } log;

  struct {
    int64_t n_plugins;
    char plugins[ND_MAX_PLUGINS][ND_PATH_MAX];
    int64_t n_overrides;
    struct nd_kernel_override overrides[ND_MAX_OVERRIDES];
    int64_t probe_timeout; /* seconds */
  } kernels;

  nd_loc loc[128];                     /* indexed by the key table of configs/keys.c */
  nd_loc section_loc[ND_MAX_SECTIONS]; /* where "model:" etc. were written */
};

/* Llama's key/value heads: model.n_kv_head, or n_head when 0. */
int64_t nd_config_n_kv_head(const nd_config *cfg);
/* Llama's MLP width: model.intermediate_size, or when 0 the rule of Meta's
 * Llama code: 2/3 of 4 * n_embd, rounded up to a multiple of 256. */
int64_t nd_config_intermediate_size(const nd_config *cfg);

/* The run's precision: train.precision, or tf32 where runtime.tf32 (its
 * older spelling) is true; validation refuses the two disagreeing. */
enum nd_precision nd_config_precision(const nd_config *cfg);

/* The location of "section.key" in the source, or {0,0} when defaulted. */
nd_loc nd__config_loc(const nd_config *cfg, const char *key);
/* Where a key's value came from, for a message checked after loading (a
 * plugin's activation, a device count): "FILE:LINE:COL: error" (or
 * "--set:1:COL: error") where the key was written, as the loader's own
 * messages begin, else the file or "the built-in defaults" (a run of the
 * embedded quick start has no file). With key NULL, the whole
 * configuration's: the file or the defaults, "and --set" when some value
 * came from there. */
const char *nd__config_origin(const nd_config *cfg, const char *key);
/* Keeps nd__config_origin(cfg, NULL) current after a load or a --set. */
void nd__config_note_origin(nd_config *cfg);

#endif
