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
int nd_checkpoint_write(const char *save_dir, int64_t step, const nd_checkpoint_files *files,
                        nd_error *err);

/* Writes "SAVE_DIR/step-N" for the largest N whose directory holds all four
 * files; hidden (.step-*) directories are ignored. ND_EIO when save_dir
 * cannot be read, ND_ECHECKPOINT when it holds no complete checkpoint,
 * ND_EINVAL when size is too small. */
int nd_checkpoint_latest(const char *save_dir, char *path_out, size_t size, nd_error *err);

/* The Hugging Face GPT-2 config.json (model_type gpt2, GPT2LMHeadModel,
 * gelu_new, layer_norm_epsilon 1e-5, n_ctx = n_positions) as a malloc'd
 * string the caller frees with free(). 0, ND_EINVAL (a size < 1) or ND_ENOMEM. */
int nd_hf_config_json(char **out, int64_t vocab_size, int64_t n_positions, int64_t n_embd,
                      int64_t n_layer, int64_t n_head);

/* What a Hugging Face Llama config.json says of the model. */
typedef struct nd_hf_llama {
  int64_t vocab_size, max_position_embeddings, hidden_size, intermediate_size;
  int64_t num_hidden_layers, num_attention_heads, num_key_value_heads;
  double rms_norm_eps, rope_theta;
  int tie_word_embeddings;
} nd_hf_llama;

/* The Hugging Face Llama config.json (model_type llama, LlamaForCausalLM,
 * silu, no biases), as nd_hf_config_json. */
int nd_hf_llama_config_json(char **out, const nd_hf_llama *m);

#endif
