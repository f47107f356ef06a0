/* The fields of a Hugging Face config.json that change the function a model
 * computes beyond its sizes (norm epsilons, RoPE, biases, activation, head
 * size, attention window): each one is honoured, its value being what the
 * configuration computes, or refused with one line naming the file and the
 * field. A checkpoint that loads is the model transformers builds from it. */
#ifndef ND_CHECKPOINT_HF_CONFIG_H
#define ND_CHECKPOINT_HF_CONFIG_H

#include <cjson/cJSON.h>

#include "configs/config.h"
#include "ndgraph/ndgraph.h"

/* doc is the parsed config.json at path. A value ndgraph does not compute
 * is ND_ENOTIMPL (bad input: exit 2); one that disagrees with a key of the
 * configuration (model.rope_theta and Llama 3's RoPE scaling, model.rms_norm_eps,
 * model.activation) is
 * ND_ECHECKPOINT, as a size that differs. */
int nd__hf_config_fields(const cJSON *doc, const char *path, const nd_config *c, nd_error *err);

#endif
