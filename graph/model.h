/* Internal to graph/: what a model family gives the step builder
 * (graph/build.c): its parameters, its activations and the forward and
 * backward of one pipeline stage for one micro-batch. */
#ifndef ND_GRAPH_MODEL_H
#define ND_GRAPH_MODEL_H

#include "graph/state.h"

typedef struct nd__model {
  const nd__act_set *acts;
  /* Sets the model's own sizes in g; refuses a layout it cannot split (message naming cfg->source). */
  int (*check)(nd_graph *g, const nd_config *cfg, nd_error *err);
  int (*nparams)(const nd_graph *g);
  void (*add_rank_params)(nd__builder *b, nd_rank r);
  void (*forward)(nd__builder *b, int d, int st, int mb);
  void (*backward)(nd__builder *b, int d, int st, int mb);
  int tied; /* the parameter shared by the first and last stages when g->tied, or -1 */
} nd__model;

extern const nd__model nd__gpt2_model, nd__llama_model;

/* The place of a Llama parameter in the model, by its Hugging Face name
 * (nd_gpt_param_order for that family). */
int64_t nd__llama_param_order(const char *hf_name);

#endif
