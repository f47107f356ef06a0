/* A training step with its tasks recorded into the trainer's trace. */
#include "common/error.h"
#include "configs/config.h"
#include "tasks/mpi.h"
#include "train/trainer_internal.h"

int nd_trainer_step_traced(nd_trainer *tr, const char *json_path, const char *svg_path, nd_step_result *res, int *tasks,
                           nd_error *err) {
  nd_trace_recorder **rec = nd__trainer_recorder(tr);
  nd_exec *ex = nd__trainer_exec(tr);
  int rc = *rec ? 0
                : nd_trace_recorder_new(rec, nd__trainer_graph(tr), nd__trainer_kernels(tr),
                                        nd__trainer_config(tr)->trace.flows, err);
  /* under mpirun the others wait in the trace's barrier and the step */
  if (!rc) rc = nd_trace_begin(*rec, ex, nd_trainer_steps_done(tr) + 1, err);
  if (rc) return nd_mpi_apart(rc, err);
  rc = nd_trainer_step(tr, res, err);
  int end = nd_trace_end(*rec, ex, rc ? NULL : err);
  if (rc) return rc;
  if (end) return nd_mpi_apart(end, err); /* the others wait in its gathering */
  /* process 0 writes the files: every process learns whether it could */
  if ((rc = nd_mpi_agree(nd_trace_save(*rec, json_path, svg_path, err), err))) return rc;
  *tasks = (int)nd_trace_recorded(*rec);
  return 0;
}
