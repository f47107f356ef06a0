/* Reads a micro-batch's token ids (inputs and/or targets) from the dataset. */
#include <stdlib.h>

#include "tasks/codelets.h"

/* buffers: [tokens (B, T)], [targets (B, T)] */
static void load_batch_cpu(void *buffers[], void *arg) {
  const nd__task_ctx *c = ND_CTX(arg);
  const struct nd_load_args *a = &c->task->a.load;
  int32_t *tokens = a->tokens ? ND_I32(0) : NULL;
  int32_t *targets = a->targets ? ND_I32(a->tokens) : NULL;
  /* nd_dataset_sequence fills both: a row of scratch stands in for the one not wanted */
  int32_t *scratch = tokens && targets ? NULL : malloc((size_t)a->T * sizeof *scratch);
  for (int i = 0; i < a->B; i++) {
    int64_t seq = c->step->seq_base + a->seq0 + i;
    nd_dataset_sequence(c->step->data, seq, tokens ? tokens + (int64_t)i * a->T : scratch,
                        targets ? targets + (int64_t)i * a->T : scratch);
  }
  free(scratch);
}
ND_CODELET(load_batch, load_batch_cpu);
