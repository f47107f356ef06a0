/* Internal access to a trainer's executor and step graph, for tools inside
 * the library (tracing) that observe the step without changing it. */
#ifndef ND_TRAIN_TRAINER_INTERNAL_H
#define ND_TRAIN_TRAINER_INTERNAL_H

#include "graph/ir.h"
#include "ndgraph/ndgraph.h"
#include "tasks/exec.h"
#include "trace/recorder.h"

nd_exec *nd__trainer_exec(nd_trainer *tr);
const nd_graph *nd__trainer_graph(const nd_trainer *tr);
const nd_config *nd__trainer_config(const nd_trainer *tr);
/* Training steps this trainer ran since it opened (resumed ones not counted). */
int64_t nd__trainer_steps_run(const nd_trainer *tr);
/* A process's submission of a step (nd_exec_submission), as the processes exchange it. */
typedef struct nd__submission {
  int64_t tasks;
  double seconds;
  int64_t graph_tasks; /* the tasks its step graph holds (under mpirun, its share's) */
} nd__submission;
/* The bytes StarPU-MPI sent from this process gathering checkpoints. */
int64_t nd__trainer_checkpoint_bytes(const nd_trainer *tr);
/* What every process of an mpirun launch must agree on: the configuration
 * as text and the bytes of each plugin (train/processes.c). */
uint64_t nd_trainer_config_hash(const nd_config *cfg);
/* nd_trainer_load of a checkpoint directory itself (a step-N or a Hugging
 * Face one), not a save_dir. */
int nd__trainer_load_dir(nd_trainer *tr, const char *dir, int with_state, nd_error *err);
/* ND_ERROR_MAX bytes: nd_trainer_resume's note (train/resume.c) */
char *nd__trainer_resume_note(nd_trainer *tr);
/* ND_PATH_MAX bytes: the checkpoint directory the trainer loaded ("" none) */
char *nd__trainer_resumed(nd_trainer *tr);
/* Opens data.train and data.val, unless open already. */
int nd__trainer_open_data(nd_trainer *tr, nd_error *err);
/* The trainer's kernel table (kernels/registry.h). */
struct nd_kernels *nd__trainer_kernels(const nd_trainer *tr);
/* The trainer's trace recorder, made at its first traced step. */
nd_trace_recorder **nd__trainer_recorder(nd_trainer *tr);

/* Both graphs' hints (tasks/schedule.h): from measured durations of the
 * step graph's tasks (NULL: the cost model), on all workers or the CPU
 * workers alone. */
int nd__trainer_apply_hints(nd_trainer *tr, const double *measured, int cpu_only, nd_error *err);
/* Back to step 0 on the same graphs and hints: the parameters initialized,
 * Adam's moments zero, and decided as the device trial's outcome (the
 * tuning pass ends with it). */
int nd__trainer_rewind(nd_trainer *tr, const nd_device_trial *decided, nd_error *err);
/* nd__trainer_rewind to the trainer as just opened: the default hints, no
 * trial decided (nd_trainer_tune may run again). */
int nd__trainer_restart(nd_trainer *tr, nd_error *err);

/* How parallelism.stage_layers: auto split the layers (stages 0: not chosen). */
typedef struct nd_balance {
  int stages;
  int mixed; /* the stages land on different kinds of device: times measured */
  int64_t split[ND_MAX_STAGES];
  int kind[ND_MAX_STAGES];                                 /* enum nd_kernel_backend */
  double layer_us[ND_MAX_STAGES], other_us[ND_MAX_STAGES]; /* per layer; the rest */
  int64_t balanced[ND_MAX_STAGES];                         /* the split that balances the stages' devices */
  double cpu_alone_ms;                                     /* a step on the CPU workers alone, when timed (else -1) */
} nd_balance;
const nd_balance *nd__trainer_balance(const nd_trainer *tr);

/* Whether the tuning pass, after timing the step, tries the CPU workers alone against
 * all workers: not under strict placement, nor for the fixed orders, and
 * only where ranks sit on CPU workers and devices (nd_sched_mixed_ranks). */
int nd__trainer_tries_cpu_alone(const nd_config *cfg, const nd_graph *g);

/* parallelism.stage_layers: auto (train/balance.c). On the trainer's current
 * (even) split, finds the device kind each stage lands on; when they differ,
 * runs two calibration steps with every rank held to its devices, measures
 * each stage's per-layer time and its other work from the second, and
 * chooses the split that minimizes the slowest stage, unless the CPU workers
 * alone, which the trainer will try next, are faster than that stage (then
 * the split stays even). Returns the split and
 * what it was chosen from; the caller reports it. The steps change the
 * parameters: the caller rebuilds the trainer, or restarts it on the even
 * split kept. */
int nd__balance_stages(nd_trainer *tr, nd_balance *out, nd_error *err);

#endif
