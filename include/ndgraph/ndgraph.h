/* ndgraph: training steps of GPT-style models as dataflow task graphs on StarPU.
 *
 * The public API. Every function that can fail returns 0 or a negative ND_E*
 * code; when it is given an nd_error it also leaves there one line that names
 * the file (or key, or step) and the problem, ready to print. */
#ifndef NDGRAPH_NDGRAPH_H
#define NDGRAPH_NDGRAPH_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NDGRAPH_VERSION "0.1.0"

#include "ndgraph/export.h"
#include "ndgraph/kernel.h"

/* Error codes: 0 is success, every failure is negative. */
#define ND_ERRNO_MAP(X)                       \
  X(ENOMEM, -1, "out of memory")              \
  X(EINVAL, -2, "invalid argument")           \
  X(ECONFIG, -3, "invalid configuration")     \
  X(EIO, -4, "input/output error")            \
  X(EDATA, -5, "invalid data file")           \
  X(ECHECKPOINT, -6, "invalid checkpoint")    \
  X(ERUNTIME, -7, "runtime (StarPU) failure") \
  X(ENOTIMPL, -8, "not implemented yet")      \
  X(ENUMERIC, -9, "non-finite value")         \
  X(EPLUGIN, -10, "invalid plugin")           \
  X(ENODEV, -11, "no such device")

enum {
#define ND__ERRNO_ENUM(name, value, text) ND_##name = value,
  ND_ERRNO_MAP(ND__ERRNO_ENUM)
#undef ND__ERRNO_ENUM
};

/* A static message for an error code ("unknown error" for codes not in the table). */
ND_EXPORT const char *nd_strerror(int code);

/* What this ndgraph is built with, for `ndgraph --version`. */
typedef struct nd_build_info {
  char starpu_version[32]; /* of the StarPU it runs on, "1.3.10" */
  int backends[ND_BACKEND_COUNT]; /* by enum nd_kernel_backend: its backend is built in (and StarPU drives it) */
  int mpi;                 /* the StarPU it is built on has StarPU-MPI */
  int max_cpus;            /* the most CPU workers that StarPU starts */
} nd_build_info;
ND_EXPORT void nd_build_describe(nd_build_info *out);
/* A device kind's name as messages and reports print it ("CPU", "OpenCL"),
 * and the kind that reports list i-th (0 <= i < ND_BACKEND_COUNT; the CPU
 * first), in an order that stays when kinds are added. */
ND_EXPORT const char *nd_device_label(int kind);
ND_EXPORT int nd_device_listed(int i);

/* The kernel set OpenBLAS runs the CPU GEMMs on ("SkylakeX", "Haswell",
 * "Prescott": its generic SSE3 one), as OpenBLAS names it. */
ND_EXPORT const char *nd_blas_core(void);

/* Call first in main(), before any thread starts: OpenBLAS picks its kernels
 * by CPU model when it is loaded, and a model it does not know gets its
 * generic ones, several times slower; and it starts its thread pool then,
 * a thread that ndgraph (one BLAS thread per worker) never uses but that may
 * receive the signals a run handles. Re-executes the program (the file
 * /proc/self/exe names, the same argv and pid) with OPENBLAS_NUM_THREADS=1 and,
 * when OpenBLAS chose its generic kernels on a CPU with AVX2 and FMA,
 * OPENBLAS_CORETYPE naming the best set the CPU runs. Returns when there is
 * nothing to do (OPENBLAS_NUM_THREADS=1 and OPENBLAS_CORETYPE already set or a
 * known CPU), when the program was started through the dynamic loader
 * (`ld.so PROGRAM`), or when the re-execution failed. */
ND_EXPORT void nd_blas_select_kernels(char **argv);

/* Where a failure's one-line explanation is left. */
#define ND_ERROR_MAX 1024
typedef struct nd_error {
  int code;
  char msg[ND_ERROR_MAX];
} nd_error;

/* Whether a file the library writes whole (a trace, a chart, a calibration)
 * could be written at path: before a long run, not after it. A device or a
 * pipe is written in place; a regular file is replaced through a temporary
 * in its directory. ND_EIO naming path and the reason otherwise. */
ND_EXPORT int nd_check_writable(const char *path, nd_error *err);

/* ---------------------------------------------------------------- config */

typedef struct nd_config nd_config;

/* A configuration holding every default (the embedded quick-start model). */
ND_EXPORT int nd_config_new(nd_config **out);
ND_EXPORT void nd_config_free(nd_config *cfg);

/* Reads a YAML file over the current values. Errors read
 * "FILE:LINE:COL: error: MESSAGE". The result is not validated across keys:
 * call nd_config_validate before use. */
ND_EXPORT int nd_config_load_file(nd_config *cfg, const char *path, nd_error *err);
/* Same, from a buffer; name is used in messages in place of a file name. */
ND_EXPORT int nd_config_load_string(nd_config *cfg, const char *name, const char *yaml, size_t len, nd_error *err);
/* Sets one key from text, as --set does: "section.key" and "value". */
ND_EXPORT int nd_config_set(nd_config *cfg, const char *key, const char *value, nd_error *err);
/* Parses one "section.key=value" assignment, as given on the command line. */
ND_EXPORT int nd_config_set_assignment(nd_config *cfg, const char *assignment, nd_error *err);
/* Checks ranges and the rules that tie keys together. */
ND_EXPORT int nd_config_validate(const nd_config *cfg, nd_error *err);
/* Writes the value of a key as text into buf; ND_EINVAL for an unknown key. */
ND_EXPORT int nd_config_get(const nd_config *cfg, const char *key, char *buf, size_t size);
/* Writes the whole configuration as YAML (every key, defaults included). */
ND_EXPORT int nd_config_dump(const nd_config *cfg, char **yaml_out, size_t *len_out);

/* ------------------------------------------------------------------- plan */

/* `ndgraph plan`: builds the step's graph cut across `processes` (1: one
 * process; `--nodes N`: its data-parallel sums across processes go in
 * chunks, docs/nodes.md) and writes its summary to out (text, or one JSON
 * object), and the graph for Graphviz to dot_path when given. */
ND_EXPORT int nd_plan_report(const nd_config *cfg, int processes, FILE *out, int json, const char *dot_path,
                             nd_error *err);
/* `ndgraph plan`, its placement section: the mapping rank -> workers, cores,
 * devices on runtime.topology (an hwloc XML) or this machine, and the bytes
 * a step moves between memory nodes. */
ND_EXPORT int nd_placement_report(const nd_config *cfg, FILE *out, nd_error *err);
/* `ndgraph plan --nodes N`: the step cut across N processes as `mpirun -np N
 * ndgraph run` cuts it: each process's ranks, the tasks it runs and submits,
 * and the bytes sent and received between processes per step
 * (docs/nodes.md); process >= 0: that process's share alone (`--process P`),
 * -1: every process's, each share built in turn. */
ND_EXPORT int nd_nodes_report(const nd_config *cfg, int nodes, int process, FILE *out, nd_error *err);
/* How many processes a launcher started (`mpirun -np N`, read from its
 * environment without starting MPI: OpenMPI's or MPICH's variables) and
 * this one's number; 1 and 0 without one. `ndgraph plan` so launched
 * reports as `--nodes N`, from process 0 alone. */
ND_EXPORT int nd_launched_processes(int *process);
/* `ndgraph plan --auto`: every layout of cfg's model and global batch that
 * fits the machine (runtime.topology, or this one) and cuts across
 * `processes` processes (1: one process) simulated with the calibration file
 * (NULL: built-in estimates), best ten printed (text, or {"plans": [...]}
 * with every plan when json); cfg then holds the best plan's settings (for
 * nd_nodes_report). docs/planner.md. */
ND_EXPORT int nd_plan_auto(nd_config *cfg, const char *calibration, int processes, FILE *out, int json,
                           nd_error *err);
/* `ndgraph plan --cluster FILE`: cfg's layout simulated on the GPUs of a
 * cluster file (step time, tokens/s, model TFLOP/s per GPU); with autoplan,
 * every layout of cfg's model and global batch on all of its GPUs, ranked
 * (docs/clusters.md). */
ND_EXPORT int nd_plan_cluster(const nd_config *cfg, const char *cluster, int autoplan, FILE *out, nd_error *err);
/* parallelism.auto: applies the best plan's settings to cfg and prints them
 * on out; refuses a runtime.topology whose workers are not this machine's. */
ND_EXPORT int nd_plan_auto_apply(nd_config *cfg, const char *calibration, int processes, FILE *out, nd_error *err);
/* `ndgraph calibrate`: times every task kind on every device of this machine
 * over the shapes cfg's layouts need and writes a calibration file to path. */
ND_EXPORT int nd_calibrate(const nd_config *cfg, const char *path, FILE *log, nd_error *err);

/* ----------------------------------------------------------- kernel check */

/* `ndgraph kernel-check`: loads the plugin at `plugin` and checks each
 * kernel or activation it registers under `name` against ndgraph's
 * double-precision reference on random inputs, one line per case to out.
 * 0 when every case passes, 1 when one fails; a negative ND_E* code when the
 * plugin cannot be used or registers nothing under name (ND_EINVAL). All of
 * it runs in a child process: a plugin that crashes, exits or makes no
 * progress for timeout_s seconds (0: kernels.probe_timeout's default) in one
 * call gives ND_ERUNTIME and a line naming it and what was running. */
ND_EXPORT int nd_kernel_check(const char *plugin, const char *name, int timeout_s, FILE *out, nd_error *err);

/* ----------------------------------------------------------------- traces */

/* A Chrome trace read back (ndgraph's, or any other with complete events). */
typedef struct nd_trace nd_trace;
ND_EXPORT int nd_trace_read(nd_trace **out, const char *path, nd_error *err);
ND_EXPORT void nd_trace_free(nd_trace *t);
/* `ndgraph trace summarize`: bubbles, critical path and efficiency, as text
 * or as one JSON object. */
ND_EXPORT int nd_trace_summary_write(const nd_trace *t, FILE *out, int json, nd_error *err);
/* `ndgraph trace svg`: the Gantt chart, written to svg_path atomically. */
ND_EXPORT int nd_trace_svg_save(const nd_trace *t, const char *svg_path, nd_error *err);

/* ---------------------------------------------------------------- metrics */

/* Metrics files (JSON Lines, as `ndgraph run --metrics` writes them) read
 * back, each one run. A line that is not a JSON object with a finite "step",
 * or a quantity that is not a number, is ND_EDATA naming FILE:LINE; values
 * that are not finite are left out and counted. */
typedef struct nd_metrics nd_metrics;
ND_EXPORT int nd_metrics_read(nd_metrics **out, const char *const *paths, int n, nd_error *err);
ND_EXPORT void nd_metrics_free(nd_metrics *m);
/* The values left out because they were not finite, over every file. */
ND_EXPORT long long nd_metrics_left_out(const nd_metrics *m);
/* `ndgraph plot`: training and validation loss, learning rate and tokens/s
 * against step, the runs overlaid, written to svg_path atomically; ND_EINVAL
 * when svg_path is one of the files read. */
ND_EXPORT int nd_metrics_svg_save(const nd_metrics *m, const char *svg_path, nd_error *err);

/* --------------------------------------------------------------- training */

typedef struct nd_trainer nd_trainer;

/* The figures of one training step. */
typedef struct nd_step_result {
  long long step; /* 1-based number of the step just done */
  double loss, lr, grad_norm;
  double step_ms, tokens_per_s, gflops;
  /* this process's submission: StarPU tasks submitted (a chain counts once)
   * and the milliseconds the submission took (docs/nodes.md) */
  long long tasks_submitted;
  double submit_ms;
} nd_step_result;

/* Builds the step's graph, starts StarPU and initializes
 * the parameters from train.seed (the same values whatever the layout). One
 * trainer per process at a time. */
ND_EXPORT int nd_trainer_open(nd_trainer **out, const nd_config *cfg, nd_error *err);
ND_EXPORT void nd_trainer_close(nd_trainer *tr);
/* Loads a checkpoint directory (step-N/, or a save_dir: its newest complete
 * step-N, as nd_trainer_resume finds it): the model, and with_state the
 * optimizer and the step count too. Shapes must match the configuration,
 * every value must be finite, config.json must agree with the configuration
 * (required in an ndgraph checkpoint; a bare weights file may lack it) and
 * state.json must hold integers in range: ND_ECHECKPOINT naming the file and
 * the tensor or field otherwise. The data sets open at the first step or
 * evaluation, so that `eval --data` needs neither data.train nor data.val. */
ND_EXPORT int nd_trainer_load(nd_trainer *tr, const char *dir, int with_state, nd_error *err);
/* The tuning pass, once, before the first step and before a resume or a
 * load: one step with every task timed, whose durations then set the
 * priorities instead of the FLOPs/bytes model, and where ranks sit on CPU
 * workers and devices the device trial (nd_device_trial: five more steps).
 * Then the trainer starts again at step 0, the parameters as initialized,
 * so tuning changes the schedule and never a bit of training. Nothing to do
 * for the fixed orders, nor with runtime.tune false. Without it, steps run on the cost model's
 * priorities and every placement the configuration allows. ND_EINVAL after
 * a step. */
ND_EXPORT int nd_trainer_tune(nd_trainer *tr, nd_error *err);
/* Runs one training step. A non-finite loss is an error (ND_ENUMERIC).
 * Data that cannot be read as it was at open (the file shrank, or holds an
 * id >= vocab_size now) is ND_EDATA naming the file; the step is then not
 * applied, and the state stays that of the steps done (it can be saved). */
ND_EXPORT int nd_trainer_step(nd_trainer *tr, nd_step_result *res, nd_error *err);
/* Process `process`'s tasks submitted and submission milliseconds in the
 * last step (under mpirun every process learns every process's figures);
 * ND_EINVAL before a step or past the processes. */
ND_EXPORT int nd_trainer_submission(const nd_trainer *tr, int process, long long *tasks, double *ms);
/* The tasks process `process`'s step graph holds (under mpirun its share of
 * the step, docs/nodes.md), as of the last step; -1 before a step or past
 * the processes. */
ND_EXPORT long long nd_trainer_graph_tasks(const nd_trainer *tr, int process);
/* Mean cross-entropy over `batches` batches of micro_batch_size sequences read
 * llm.c-style from the start of data (NULL: data.val). */
ND_EXPORT int nd_trainer_eval(nd_trainer *tr, const char *data, long long batches, double *loss, long long *tokens,
                              nd_error *err);
/* The first n ids (at most model.seq_len) of data.val, or of data.train when
 * data.val is empty: the prompt of `run`'s samples (train.sample_every). */
ND_EXPORT int nd_trainer_data_prefix(nd_trainer *tr, int *ids, int n, nd_error *err);

/* Generation from a trainer's current parameters, with a key/value cache
 * (docs/generate.md): the prompt's forward (prefill), then one forward of one
 * token per new token, each a submission of the same task graph at the next
 * position. One pipeline of the trainer's tensor split; one process. */
typedef struct nd_generator nd_generator;
typedef struct nd_generate_opts {
  const int *prompt; /* ids, each below vocab_size */
  int n_prompt;      /* at least 1 */
  int tokens;        /* new ids; n_prompt + tokens <= model.seq_len */
  double temperature; /* 0: greedy (the lowest id among equal maxima); else softmax(logits / temperature) */
  int top_k;          /* 0: every id; else only the top_k largest logits */
  unsigned long long seed;
  void (*on_token)(void *user, int id); /* each new id as it comes (NULL: none) */
  void *user;
} nd_generate_opts;
typedef struct nd_generate_result {
  double prefill_ms, decode_ms; /* the prompt's forward; the new tokens' (the first comes from the prefill) */
  int generated;
} nd_generate_result;
ND_EXPORT int nd_generator_open(nd_generator **out, nd_trainer *tr, nd_error *err);
/* Copies tr's parameters (they may have changed since the last call), then
 * generates. A prompt or length out of range is ND_EINVAL. */
ND_EXPORT int nd_generate(nd_generator *gen, nd_trainer *tr, const nd_generate_opts *o, nd_generate_result *res,
                          nd_error *err);
ND_EXPORT void nd_generator_close(nd_generator *gen);
/* Writes save_dir/step-N (N: steps done) atomically, after checking that
 * every tensor is finite (ND_ENUMERIC naming the tensor otherwise); then,
 * with train.keep_checkpoints N > 0, removes all but the N newest complete
 * checkpoints. */
ND_EXPORT int nd_trainer_save(nd_trainer *tr, nd_error *err);
/* Before training into train.save_dir (nothing to do when it is empty):
 * opens the training and validation data (so that a run that cannot read
 * them stops before it creates the directory, ND_EDATA naming the file),
 * removes the temporaries of writers that are gone, puts back a checkpoint a
 * writer left moved aside, and checks that the directory can be created and
 * written (ND_EIO naming it otherwise). Reports the free bytes there and
 * what one checkpoint needs, for a warning when it does not fit. */
typedef struct nd_save_dir_check {
  int removed, restored; /* stale temporaries removed; checkpoints put back */
  unsigned long long free_bytes, need_bytes;
  long long newest; /* the newest complete step-N there already, 0 when none */
} nd_save_dir_check;
ND_EXPORT int nd_trainer_check_save_dir(nd_trainer *tr, nd_save_dir_check *out, nd_error *err);
ND_EXPORT long long nd_trainer_steps_done(const nd_trainer *tr);

/* What the run holds, measured in this process (docs/memory.md). */
typedef struct nd_memory_use {
  long long rss_peak;    /* bytes: the process's peak resident set (getrusage) */
  long long tensors;     /* bytes of tensors this process allocated in main memory, all its ranks */
  long long rank_peak;   /* the most of those one rank holds */
  int rank_of_peak;      /* that rank's index (data-major, then pipeline, then tensor) */
  long long device_peak; /* the most StarPU held on device memory nodes at the end of a step; 0: none */
} nd_memory_use;
ND_EXPORT void nd_trainer_memory(nd_trainer *tr, nd_memory_use *out);

/* What nd_trainer_gather copies. */
enum nd_gather { ND_GATHER_PARAM, ND_GATHER_GRAD, ND_GATHER_ADAM_M, ND_GATHER_ADAM_V };
/* Copies a tensor, given by its Hugging Face name, into the single-rank
 * layout (n: its element count). Gradients are those of the last step. */
ND_EXPORT int nd_trainer_gather(nd_trainer *tr, const char *hf_name, enum nd_gather what, float *out, long long n);
/* Hugging Face names of the model's tensors, in checkpoint order; NULL past the end. */
ND_EXPORT const char *nd_trainer_tensor_name(const nd_trainer *tr, int i, long long *numel);

/* Loads the checkpoint in dir: a step-N directory, or a save_dir (its newest
 * step-N). The optimizer state and the step count come too when the
 * directory holds them; weights alone (a Hugging Face GPT-2 checkpoint, say)
 * start a fine-tuning run at step 0. Writes the directory used to used[size]
 * and whether the state was loaded to *with_state. */
ND_EXPORT int nd_trainer_resume(nd_trainer *tr, const char *dir, char *used, size_t size, int *with_state,
                                nd_error *err);
/* After nd_trainer_resume of a save_dir: why a newer step-N there was not
 * used (it lacks a file), as one line; "" when the newest was used. */
ND_EXPORT const char *nd_trainer_resume_note(const nd_trainer *tr);
/* After a checkpoint was loaded with its state: the data.train its steps
 * read, as its state.json records it ("" when it names none), for a
 * warning when the run goes on with other data. */
ND_EXPORT const char *nd_trainer_resumed_data(const nd_trainer *tr);

/* The devices a trainer's tasks run on: per enum nd_kernel_backend, how
 * many workers StarPU started (count[ND_BACKEND_CPU]: CPU workers). */
ND_EXPORT void nd_trainer_devices(const nd_trainer *tr, int count[ND_BACKEND_COUNT]);
/* The i-th device (from 0) of kind `kind` a trainer's tasks run on, named
 * by its backend ("<kind>0: NVIDIA H200, 139.8 GiB": model and memory) in
 * name (at most size bytes). ND_EINVAL past the end, or where the backend
 * does not name its devices. */
ND_EXPORT int nd_trainer_device(const nd_trainer *tr, int kind, int i, char *name, size_t size);

/* Several processes (`mpirun -np N ndgraph run`, docs/nodes.md): this
 * process, how many there are (1 without mpirun), and across all of them the
 * bytes StarPU-MPI sent for the steps since the trainer opened next to what
 * the plan predicts for the steps run, the bytes it sent gathering
 * checkpoints apart, and the tasks each step submits here. Every process
 * calls it at the same point (it sums over the processes). */
typedef struct nd_process_info {
  int process, processes;
  long long bytes_sent, bytes_predicted, bytes_checkpoints;
  long long tasks, tasks_submitted; /* per step: the whole step's, this process's */
  long long tasks_built;            /* the tasks this process's step graph holds (its share under mpirun) */
} nd_process_info;
ND_EXPORT int nd_trainer_processes(nd_trainer *tr, nd_process_info *out);
/* What process p (0 to processes - 1) runs on, as the processes told each
 * other at start: its host, hwloc's counts of its machine, the workers
 * StarPU started there, and the ranks it owns, first_rank to last_rank,
 * numbered (replica * pipeline_parallel_size + stage) *
 * tensor_parallel_size + shard (-1: none). ND_EINVAL for another p. */
typedef struct nd_node_info {
  char host[64];
  int packages, numa_nodes, cores, pus;
  int devices[ND_BACKEND_COUNT]; /* workers StarPU started, by kind (the CPU's: CPU workers) */
  int first_rank, last_rank;
} nd_node_info;
ND_EXPORT int nd_trainer_node(const nd_trainer *tr, int process, nd_node_info *out);
/* The signal every process acts on after a step: each passes the one it
 * noted (0: none) and all get the same, a stop (SIGINT, then SIGTERM)
 * before SIGUSR1, so that all stop or checkpoint after the same step. A
 * collective under mpirun; sig itself without. Once a stop is agreed, the
 * processes' exits (130, 143) end the job cleanly instead of aborting it. */
ND_EXPORT int nd_trainer_agree_signal(nd_trainer *tr, int sig);
/* Under mpirun, how the processes stand after a stretch of work of the
 * caller's own that may fail on one of them only (writing a metrics file):
 * each passes its status (0, or the error it met, with err) and all get the
 * same, 0 or the error of the first process that failed. That process's
 * err names it ("process P: ...") and is the job's one line: the others'
 * standard error is closed, and the processes end together, cleanly. The
 * trainer's own operations (steps, evaluations, checkpoints) agree on
 * their outcome this way already. A collective under mpirun; rc without. */
ND_EXPORT int nd_trainer_agree(nd_trainer *tr, int rc, nd_error *err);
/* Under mpirun, before the first step: every process opens its data and
 * compares with process 0 the data files (size, first and last 64 KiB) and
 * the checkpoint it resumed from (its files), so that processes reading
 * different files under the same path, or resuming from different
 * checkpoints, do not train on inconsistent state. ND_EDATA or
 * ND_ECHECKPOINT on every process, the line naming the one that differs
 * (as nd_trainer_agree). A collective under mpirun; 0 without. */
ND_EXPORT int nd_trainer_check_shared(nd_trainer *tr, nd_error *err);

/* The i-th task kind (from 0) whose kernel a plugin supplies: its kind, the
 * kernel's name and the plugin's path. ND_EINVAL past the end. */
ND_EXPORT int nd_trainer_plugin_kernel(const nd_trainer *tr, int i, const char **kind, const char **name,
                                       const char **origin);

/* On a node whose ranks land on CPU workers and devices, nd_trainer_tune
 * times two steps with all workers against two on the CPU workers alone,
 * after the step that times the tasks, and keeps the faster
 * (docs/scheduler.md, *Mixed nodes*). The outcome: decided is 0 where there
 * is none (one kind of worker, strict placement, a fixed order, or no
 * tuning pass). */
typedef struct nd_device_trial {
  int decided;
  int kept_devices; /* 1: all workers; 0: the CPU workers alone, the devices idle */
  long long step;   /* the tuning step that ended the trial */
  double all_ms;    /* the faster step with all workers */
  double cpu_ms;    /* the faster step on the CPU workers alone */
} nd_device_trial;
ND_EXPORT int nd_trainer_device_trial(const nd_trainer *tr, nd_device_trial *out);

/* How parallelism.stage_layers: auto split the layers, stage by stage. */
typedef struct nd_stage_info {
  long long layers;
  const char *device; /* the kind of worker the stage lands on: "cpu", "opencl" */
  /* measured per layer and for the rest of the stage's work; negative when
   * every stage lands on the same kind of device (the even split, unmeasured) */
  double layer_ms, other_ms;
  /* the split that balances the stages' devices; it differs from `layers`
   * when even its slowest stage took longer than a whole step on the CPU
   * workers alone (cpu_alone_ms, negative when not timed): the trainer then
   * keeps the CPU workers alone, and the split stays even */
  long long balanced_layers;
  double cpu_alone_ms;
} nd_stage_info;
/* ND_EINVAL when the split was given, not chosen, or stage is out of range. */
ND_EXPORT int nd_trainer_stage(const nd_trainer *tr, int stage, nd_stage_info *out);

/* Whether training step `step` (from 1) of a run doing steps first..last is
 * to be traced: listed in trace.steps or, when the list is empty, the second
 * step of the run (after warm-up; the last if fewer). */
ND_EXPORT int nd_trace_wanted(const nd_config *cfg, long long first, long long last, long long step);
/* Runs one training step with its tasks recorded, then rewrites the Chrome
 * trace json_path and the Gantt chart svg_path (either may be NULL or empty)
 * with every step this trainer traced, so a later crash keeps them. *tasks:
 * the tasks the step recorded. */
ND_EXPORT int nd_trainer_step_traced(nd_trainer *tr, const char *json_path, const char *svg_path, nd_step_result *res,
                                     int *tasks, nd_error *err);

#ifdef __cplusplus
}
#endif
#endif
