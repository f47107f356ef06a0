/* Internal to graph/: what a model family gives the step builder
 * (graph/build.c): its parameters, its activations (graph/state.h rows) and
 * the forward and backward of one transformer block. What every family
 * shares (a stage's input, the pipeline hand-over, the final norm, the LM
 * head and the loss, the embedding's gradient) is graph/stage.c's. */
#ifndef ND_GRAPH_MODEL_H
#define ND_GRAPH_MODEL_H

#include "graph/emit.h"

typedef struct nd__model {
  const nd__act_set *acts;
  /* Sets the model's own sizes in g; refuses a layout it cannot split (message naming cfg->source). */
  int (*check)(nd_graph *g, const nd_config *cfg, nd_error *err);
  int (*nparams)(const nd_graph *g);
  void (*add_rank_params)(nd__builder *b, nd_rank r);
  /* Block l of replica d's stage st for micro-batch mb, on every context and
   * tensor rank (nd__group_rank): from nd__layer_input to the block's
   * acts->xout, and back. */
  void (*layer_forward)(nd__builder *b, int d, int st, int mb, int l);
  void (*layer_backward)(nd__builder *b, int d, int st, int mb, int l);
  enum nd__norm_kind norm; /* the family's normalization (the final one before the head) */
  /* Parameters by index: the token embedding (also the head when g->tied),
   * a learned position table on tensor rank 0, the final norm's weight and
   * bias, and the untied head; -1 where the family has none. */
  int embed, pos_embed, norm_w, norm_b, head;
} nd__model;

extern const nd__model nd__gpt2_model, nd__llama_model;

/* The forward of replica d's pipeline stage st for micro-batch mb, on every
 * context and tensor rank: the stage's input (the batch and the embedding on
 * the first stage, the previous stage's output on the others), its blocks,
 * and on the last stage
 * the final norm, head and loss. The backward, of the replicas d with on[d],
 * is the same in reverse, ending with the gradient sent to the previous stage
 * or the embedding's gradients. */
void nd__stage_forward(nd__builder *b, const nd__model *m, int d, int st, int mb);
void nd__stage_backward(nd__builder *b, const nd__model *m, const uint8_t *on, int st, int mb);

/* The place of a Llama parameter in the model, by its Hugging Face name
 * (nd_gpt_param_order for that family). */
int64_t nd__llama_param_order(const char *hf_name);

#endif
