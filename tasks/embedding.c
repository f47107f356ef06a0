/* Token and position embeddings, vocabulary-parallel. */
#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: out (B*T, C), tokens (B*T), wte shard (Vs, C), [wpe (T, C)] */
static void embedding_fwd_cpu(void *buffers[], void *arg) {
  const struct nd_emb_args *a = &ND_CTX(arg)->task->a.emb;
  nd_embedding_forward(ND_F32(0), ND_I32(1), ND_F32(2), a->wpe ? ND_F32(3) : NULL, a->B, a->T, a->C, a->v0,
                       a->Vs);
}
ND_CODELET(embedding_fwd, embedding_fwd_cpu);

/* buffers: dtable (the wte shard (Vs, C), or wpe (T, C) when a->wpe), dout (B*T, C), tokens (B*T) */
static void embedding_bwd_cpu(void *buffers[], void *arg) {
  const struct nd_emb_args *a = &ND_CTX(arg)->task->a.emb;
  nd_embedding_backward(a->wpe ? NULL : ND_F32(0), a->wpe ? ND_F32(0) : NULL, ND_F32(1), ND_I32(2), a->B,
                        a->T, a->C, a->v0, a->Vs, a->beta);
}
ND_CODELET(embedding_bwd, embedding_bwd_cpu);
