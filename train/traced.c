/* A training step with its tasks recorded into the trainer's trace. */
#include "common/error.h"
#include "configs/config.h"
#include "train/trainer_internal.h"

int nd_trainer_step_traced(nd_trainer *tr, const char *json_path, const char *svg_path, nd_step_result *res, int *tasks,
                           nd_error *err) {
  nd_trace_recorder **rec = nd__trainer_recorder(tr);
  nd_exec *ex = nd__trainer_exec(tr);
  int rc;
  if (!*rec && (rc = nd_trace_recorder_new(rec, nd__trainer_graph(tr), nd__trainer_kernels(tr),
                                           nd__trainer_config(tr)->trace.flows, err)))
    return rc;
  rc = nd_trace_begin(*rec, ex, nd_trainer_steps_done(tr) + 1, err);
  if (!rc) rc = nd_trainer_step(tr, res, err);
  int end = nd_trace_end(*rec, ex, rc ? NULL : err);
  if (rc || (rc = end) || (rc = nd_trace_save(*rec, json_path, svg_path, err))) return rc;
  *tasks = (int)nd_trace_recorded(*rec);
  return 0;
}
