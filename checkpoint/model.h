/* A model's checkpoint as the trainer sees it: the whole tensors it holds,
 * saved with their optimizer state, and loaded back with every check that a
 * resume or an evaluation needs (shapes as stored, finite values, config.json
 * against the configuration, a state.json in range). The trainer hands its
 * tensors over through gather and scatter; nothing here knows about shards. */
#ifndef ND_CHECKPOINT_MODEL_H
#define ND_CHECKPOINT_MODEL_H

#include <stdint.h>

#include "configs/config.h"
#include "ndgraph/ndgraph.h"

typedef struct nd_ckpt_tensor {
  const char *name; /* Hugging Face name, "wte.weight", "model.norm.weight" */
  int ndim;         /* 1 or 2 */
  int64_t shape[2];
  int64_t numel;
} nd_ckpt_tensor;

/* A position table (GPT-2's wpe.weight) loaded from a file with more rows
 * than model.seq_len: the model trains the first seq_len; the rows past them,
 * of each kind (nd_gather: weights and Adam's moments), are kept here and
 * written back unchanged, so that a fine-tune at a shorter context keeps the
 * checkpoint's whole context. data[kind] NULL: zeros (Adam's moments of a
 * file without optimizer state). */
typedef struct nd_ckpt_rows {
  int64_t rows;
  float *data[4];
} nd_ckpt_rows;

typedef struct nd_ckpt_model {
  const nd_config *cfg; /* model sizes for config.json, train.save_dir, data.train */
  const nd_ckpt_tensor *tensors;
  int n;
  /* tensor k of kind `what`, whole, into out / from in (numel floats) */
  int (*gather)(void *user, int k, enum nd_gather what, float *out);
  int (*scatter)(void *user, int k, enum nd_gather what, const float *in); /* 0 or ND_ENOMEM */
  void *user;
  int gather_only;     /* several processes (docs/nodes.md): gather with the others, write nothing */
  nd_ckpt_rows *extra; /* wpe.weight's rows past model.seq_len (the caller frees data[]); NULL: none kept */
} nd_ckpt_model;

/* What state.json holds: steps done, sequences consumed, Adam's t, and the
 * data.train the steps read. Saving records the configuration's data.train;
 * loading fills data ("" when state.json names none). */
typedef struct nd_ckpt_state {
  int64_t step, data_position, adam_t;
  char data[ND_PATH_MAX];
} nd_ckpt_state;

/* Writes train.save_dir/step-N (N = s->step) after checking that every
 * parameter and optimizer tensor is finite: a non-finite one is refused
 * (ND_ENUMERIC) with its name, and nothing is written. */
int nd_ckpt_save(const nd_ckpt_model *m, const nd_ckpt_state *s, nd_error *err);

/* Loads DIR/model.safetensors and, with with_state, optimizer.safetensors
 * and state.json into *s. DIR/config.json is read and compared with the
 * configuration (required when DIR is an ndgraph checkpoint: it has a
 * state.json or optimizer.safetensors; a bare weights file may lack it); a
 * field that changes the model is honoured or refused (checkpoint/hf_config.h)
 * before any tensor is read, and a tensor of the files that the model does
 * not use is refused, never dropped. Errors name the file and the tensor or
 * field: ND_ECHECKPOINT. */
int nd_ckpt_load(const nd_ckpt_model *m, const char *dir, int with_state, nd_ckpt_state *s, nd_error *err);

#endif
