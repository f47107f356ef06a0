/* Causal self-attention over a tensor rank's heads, run by the implementation
 * the kernel table selects. */
#include "tasks/codelets.h"

#ifdef ND_HAVE_OPENCL
#include <math.h>

static void attention_fwd_ocl(void *buffers[], void *arg) {
  const struct nd_attn_args *at = &ND_CTX(arg)->task->a.attn;
  cl_mem out = ND_MEM(0), att = ND_MEM(1), qkv = ND_MEM(2);
  float scale = 1.0f / sqrtf((float)at->hs);
  size_t tt[] = {(size_t)at->B * at->NH, (size_t)at->T, (size_t)at->T};
  size_t rows = (size_t)at->B * at->NH * at->T;
  size_t td[] = {(size_t)at->B * at->NH, (size_t)at->T, (size_t)at->hs};
  nd_ocl_arg s[] = {ND_OCL_ARG(att), ND_OCL_ARG(qkv), ND_OCL_ARG(at->T), ND_OCL_ARG(at->NH), ND_OCL_ARG(at->hs),
                    ND_OCL_ARG(scale)};
  nd_ocl_arg m[] = {ND_OCL_ARG(att), ND_OCL_ARG(at->T)};
  nd_ocl_arg o[] = {ND_OCL_ARG(out), ND_OCL_ARG(att), ND_OCL_ARG(qkv), ND_OCL_ARG(at->T), ND_OCL_ARG(at->NH),
                    ND_OCL_ARG(at->hs)};
  int rc = nd_ocl_run(ND_OCL_att_scores, 3, tt, 6, s);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_softmax, 1, &rows, 2, m);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_out, 3, td, 6, o);
  ND_OCL_CHECK(ND_TASK_ATTN_FWD, rc);
}

static void attention_bwd_ocl(void *buffers[], void *arg) {
  const struct nd_attn_args *at = &ND_CTX(arg)->task->a.attn;
  cl_mem dqkv = ND_MEM(0), datt = ND_MEM(1), dout = ND_MEM(2), qkv = ND_MEM(3), att = ND_MEM(4);
  float scale = 1.0f / sqrtf((float)at->hs);
  size_t tt[] = {(size_t)at->B * at->NH, (size_t)at->T, (size_t)at->T};
  size_t rows = (size_t)at->B * at->NH * at->T;
  size_t td[] = {(size_t)at->B * at->NH, (size_t)at->T, (size_t)at->hs};
  nd_ocl_arg d[] = {ND_OCL_ARG(datt), ND_OCL_ARG(dout), ND_OCL_ARG(qkv), ND_OCL_ARG(at->T), ND_OCL_ARG(at->NH),
                    ND_OCL_ARG(at->hs)};
  nd_ocl_arg m[] = {ND_OCL_ARG(datt), ND_OCL_ARG(att), ND_OCL_ARG(at->T)};
  nd_ocl_arg g[] = {ND_OCL_ARG(dqkv), ND_OCL_ARG(datt), ND_OCL_ARG(att),    ND_OCL_ARG(dout),  ND_OCL_ARG(qkv),
                    ND_OCL_ARG(at->T), ND_OCL_ARG(at->NH), ND_OCL_ARG(at->hs), ND_OCL_ARG(scale)};
  int rc = nd_ocl_run(ND_OCL_att_dscores, 3, tt, 6, d);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_softmax_bwd, 1, &rows, 3, m);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_dqkv, 3, td, 9, g);
  ND_OCL_CHECK(ND_TASK_ATTN_BWD, rc);
}
#endif

/* buffers: out (B, T, NH*hs), att (B, NH, T, T), qkv (B, T, 3*NH*hs) */
ND_CODELET_OCL(attention_fwd, nd__dispatch_cpu, attention_fwd_ocl);

/* buffers: dqkv (B, T, 3*NH*hs), datt (B, NH, T, T) scratch, dout (B, T, NH*hs), qkv, att */
ND_CODELET_OCL(attention_bwd, nd__dispatch_cpu, attention_bwd_ocl);
