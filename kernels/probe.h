/* Internal: running plugin code first in a child process (the start-up
 * probe of run and plan, kernel-check), so that a plugin that crashes,
 * hangs or exits there ends ndgraph with one line naming the plugin and
 * what of it was running, instead of taking ndgraph down with it. */
#ifndef ND_KERNELS_PROBE_H
#define ND_KERNELS_PROBE_H

#include "ndgraph/ndgraph.h"

/* Where a probe runs and what sets its time, for its messages:
 * {"the start-up probe", "kernels.probe_timeout", 30}. */
typedef struct nd__probe_ctx {
  const char *where;
  const char *setting;
  int timeout_s;
} nd__probe_ctx;

/* Runs body(arg, err) in a child process and returns what it returned, with
 * its message in err. A child killed by a signal, silent for ctx->timeout_s
 * (then killed) or exiting before body returned gives ND_ERUNTIME and one
 * line: the stage it last announced, what ended it, and ctx->where. Standard
 * output and error are flushed first; what the child prints goes where ours
 * goes. */
int nd__probe(const nd__probe_ctx *ctx, int (*body)(const void *arg, nd_error *err), const void *arg, nd_error *err);

/* In the child: what is about to run ("PLUGIN: kernel 'x' for matmul_fwd"),
 * after flushing what was printed so far. Nothing outside a probe. */
void nd__probe_stage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
