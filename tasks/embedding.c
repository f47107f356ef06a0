/* Token and position embeddings, vocabulary-parallel. */
#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: out (B*T, C), tokens (B*T), wte shard (Vs, C), [wpe (T, C)] */
static void embedding_fwd_cpu(void *buffers[], void *arg) {
  const struct nd_emb_args *a = &ND_CTX(arg)->task->a.emb;
  nd_embedding_forward(ND_F32(0), ND_I32(1), ND_F32(2), a->wpe ? ND_F32(3) : NULL, a->B, a->T, a->C, a->v0,
                       a->Vs);
}
#ifdef ND_HAVE_OPENCL
static void embedding_fwd_ocl(void *buffers[], void *arg) {
  const struct nd_emb_args *a = &ND_CTX(arg)->task->a.emb;
  cl_mem out = ND_MEM(0), tok = ND_MEM(1), wte = ND_MEM(2), wpe = a->wpe ? ND_MEM(3) : wte;
  size_t g[] = {(size_t)a->B * a->T, (size_t)a->C};
  nd_ocl_arg args[] = {ND_OCL_ARG(out), ND_OCL_ARG(tok), ND_OCL_ARG(wte),  ND_OCL_ARG(wpe),  ND_OCL_ARG(a->wpe),
                       ND_OCL_ARG(a->T), ND_OCL_ARG(a->C), ND_OCL_ARG(a->v0), ND_OCL_ARG(a->Vs)};
  ND_OCL_CHECK(ND_TASK_EMBED_FWD, nd_ocl_run(ND_OCL_embed_fwd, 2, g, 9, args));
}
#endif
ND_CODELET_OCL(embedding_fwd, embedding_fwd_cpu, embedding_fwd_ocl);

/* buffers: dtable (the wte shard (Vs, C), or wpe (T, C) when a->wpe), dout (B*T, C), tokens (B*T) */
static void embedding_bwd_cpu(void *buffers[], void *arg) {
  const struct nd_emb_args *a = &ND_CTX(arg)->task->a.emb;
  nd_embedding_backward(a->wpe ? NULL : ND_F32(0), a->wpe ? ND_F32(0) : NULL, ND_F32(1), ND_I32(2), a->B,
                        a->T, a->C, a->v0, a->Vs, a->beta);
}
#ifdef ND_HAVE_OPENCL
static void embedding_bwd_ocl(void *buffers[], void *arg) {
  const struct nd_emb_args *a = &ND_CTX(arg)->task->a.emb;
  cl_mem dtable = ND_MEM(0), dout = ND_MEM(1), tok = ND_MEM(2);
  int rc;
  if (a->wpe) {
    size_t g[] = {(size_t)a->T, (size_t)a->C};
    nd_ocl_arg args[] = {ND_OCL_ARG(dtable), ND_OCL_ARG(dout), ND_OCL_ARG(a->B), ND_OCL_ARG(a->T),
                         ND_OCL_ARG(a->beta)};
    rc = nd_ocl_run(ND_OCL_embed_bwd_wpe, 2, g, 5, args);
  } else {
    int bt = a->B * a->T;
    size_t c = (size_t)a->C;
    nd_ocl_arg args[] = {ND_OCL_ARG(dtable), ND_OCL_ARG(dout), ND_OCL_ARG(tok), ND_OCL_ARG(bt),
                         ND_OCL_ARG(a->C),   ND_OCL_ARG(a->v0), ND_OCL_ARG(a->Vs)};
    rc = nd_ocl_scale(dtable, (size_t)a->Vs * c, a->beta);
    if (!rc) rc = nd_ocl_run(ND_OCL_embed_bwd_wte, 1, &c, 7, args);
  }
  ND_OCL_CHECK(ND_TASK_EMBED_BWD, rc);
}
#endif
ND_CODELET_OCL(embedding_bwd, embedding_bwd_cpu, embedding_bwd_ocl);
