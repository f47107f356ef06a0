/* Captures the tasks of chosen training steps from StarPU's profiling
 * information and writes them as a Chrome trace (and optionally a Gantt
 * SVG). Profiling is switched on only around the traced steps, so the other
 * steps run exactly as without tracing. */
#ifndef ND_TRACE_RECORDER_H
#define ND_TRACE_RECORDER_H

#include "configs/config.h"
#include "graph/ir.h"
#include "tasks/exec.h"

typedef struct nd_trace_recorder nd_trace_recorder;

/* flows: also write the IR's dependencies as arrows. k: the kernel table the
 * tasks run with (its implementations go into the trace; NULL: built-ins);
 * g and k outlive the recorder. */
int nd_trace_recorder_new(nd_trace_recorder **out, const nd_graph *g, const nd_kernels *k, int flows, nd_error *err);
void nd_trace_recorder_free(nd_trace_recorder *r);

/* Observes the tasks of graph 0 of `ex` until nd_trace_end. */
int nd_trace_begin(nd_trace_recorder *r, nd_exec *ex, long long step, nd_error *err);
/* Stops observing and keeps the step, its times made consistent (see recorder.c). */
int nd_trace_end(nd_trace_recorder *r, nd_exec *ex, nd_error *err);

/* Writes every step kept so far: the Chrome trace to json_path and the Gantt
 * chart to svg_path (either may be NULL or empty). Each file atomically. */
int nd_trace_save(const nd_trace_recorder *r, const char *json_path, const char *svg_path, nd_error *err);

/* Tasks the last kept step recorded (every task of the graph when all went well). */
int32_t nd_trace_recorded(const nd_trace_recorder *r);

#endif
