/* Checkpoint directories: SAVE_DIR/step-N/ holding model.safetensors
 * (Hugging Face GPT-2 names), optimizer.safetensors, config.json (Hugging
 * Face) and state.json (what a resume needs). A directory appears complete
 * or not at all: it is built as SAVE_DIR/.step-N.tmp-PID/ and renamed. */
#ifndef ND_CHECKPOINT_CHECKPOINT_H
#define ND_CHECKPOINT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint/safetensors.h"
#include "ndgraph/ndgraph.h"

typedef struct nd_checkpoint_files {
  const nd_st_tensor *model;
  int n_model; /* HF GPT-2 names: "wte.weight", "h.0.attn.c_attn.weight", ... */
  const nd_st_tensor *optimizer;
  int n_optimizer;         /* e.g. "m.wte.weight", "v.wte.weight" */
  const char *config_json; /* Hugging Face config.json text (nd_hf_config_json) */
  const char *state_json;  /* step, data position, anything needed to resume */
} nd_checkpoint_files;

/* Writes SAVE_DIR/step-STEP/ (creating SAVE_DIR and its parents). Each file
 * is fsync'd in the temporary directory before the rename; an existing
 * step-STEP is first renamed aside to .step-STEP.old-PID, then removed once
 * the new one is in place. config_json and state_json must be valid JSON. */
int nd_checkpoint_write(const char *save_dir, int64_t step, const nd_checkpoint_files *files, nd_error *err);

/* Writes "SAVE_DIR/step-N" for the largest N whose directory holds all four
 * files; hidden (.step-*) directories are ignored. ND_EIO when save_dir
 * cannot be read, ND_ECHECKPOINT when it holds no complete checkpoint,
 * ND_EINVAL when size is too small. */
int nd_checkpoint_latest(const char *save_dir, char *path_out, size_t size, nd_error *err);

/* Removes the temporaries (.step-N.tmp-PID, .step-N.del-PID) of processes
 * that are gone, and puts back a .step-N.old-PID whose step-N is missing (a
 * writer killed between its two renames). Counts in *removed, *restored. A
 * missing save_dir has nothing to clean. */
int nd_checkpoint_clean_stale(const char *save_dir, int *removed, int *restored, nd_error *err);

/* Retention, once step-NEWEST is complete: of the complete checkpoints up to
 * NEWEST, keeps the `keep` newest and removes the others (keep < 1: keeps
 * all). Newer, incomplete and hidden directories are not touched. The count
 * removed in *removed. */
int nd_checkpoint_prune(const char *save_dir, int64_t newest, int64_t keep, int *removed, nd_error *err);

/* 1 when a step-N newer than `step` exists but is incomplete: its N in
 * *newer, the first file it lacks in *missing; else 0. */
int nd_checkpoint_newer_incomplete(const char *save_dir, int64_t step, int64_t *newer, const char **missing);

/* At start: save_dir can be created and a file written in it (ND_EIO naming
 * the directory and train.save_dir otherwise); *avail: free bytes there
 * (UINT64_MAX when unknown). */
int nd_checkpoint_check_dir(const char *save_dir, uint64_t *avail, nd_error *err);

/* One writer per save_dir (created already): an advisory lock on
 * SAVE_DIR/.lock, held until *fd is closed or the process ends, whatever
 * ends it. ND_EIO naming save_dir (and the holder's pid when known) when
 * another process holds it. On a file system without locks nothing is held
 * (*fd is -1) and the run goes on. */
int nd_checkpoint_lock(const char *save_dir, int *fd, nd_error *err);

/* Internal. A name PREFIX N with N decimal; with rest, what follows N
 * (from its first '.') is allowed and returned in *rest. */
int nd__checkpoint_step_of(const char *name, const char *prefix, int64_t *step, const char **rest);
/* The first checkpoint file dir lacks (not a regular file), NULL when complete. */
const char *nd__checkpoint_missing(const char *dir);

/* The Hugging Face GPT-2 config.json (model_type gpt2, GPT2LMHeadModel,
 * gelu_new, layer_norm_epsilon 1e-5, n_ctx = n_positions) as a malloc'd
 * string the caller frees with free(). 0, ND_EINVAL (a size < 1) or ND_ENOMEM. */
int nd_hf_config_json(char **out, int64_t vocab_size, int64_t n_positions, int64_t n_embd, int64_t n_layer,
                      int64_t n_head);

/* What a Hugging Face Llama config.json says of the model. */
typedef struct nd_hf_llama {
  int64_t vocab_size, max_position_embeddings, hidden_size, intermediate_size;
  int64_t num_hidden_layers, num_attention_heads, num_key_value_heads;
  double rms_norm_eps, rope_theta;
  int tie_word_embeddings;
  /* Llama 3's RoPE scaling (rope_type llama3); factor 1: the default RoPE */
  double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
  int64_t rope_original_context;
} nd_hf_llama;

/* The Hugging Face Llama config.json (model_type llama, LlamaForCausalLM,
 * silu, no biases), as nd_hf_config_json. */
int nd_hf_llama_config_json(char **out, const nd_hf_llama *m);

#endif
