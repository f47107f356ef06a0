/* A trainer across the processes of an mpirun launch: what they must agree
 * on (the configuration's hash, a failure of one of them, a signal) and what
 * they report together (bytes sent against the plan's prediction, tasks
 * submitted per process). */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/hash.h"
#include "tasks/mpi.h"
#include "tasks/nodes.h"
#include "train/trainer_internal.h"

uint64_t nd_trainer_config_hash(const nd_config *cfg) {
  uint64_t h = ND_FNV_BASIS;
  char *yaml = NULL;
  size_t len = 0;
  if (nd_config_dump(cfg, &yaml, &len) == 0) h = nd__fnv(h, yaml, len);
  free(yaml);
  for (int64_t i = 0; i < cfg->kernels.n_plugins; i++) {
    char *bytes = NULL;
    size_t n = 0;
    /* a plugin this process cannot read hashes differently from one it can */
    if (nd__read_file(cfg->kernels.plugins[i], (size_t)1 << 30, &bytes, &n) == 0)
      h = nd__fnv(h, bytes, n);
    else
      h = nd__fnv(h, "unreadable", 10);
    free(bytes);
  }
  return h;
}

int nd_trainer_processes(nd_trainer *tr, nd_process_info *out) {
  nd_exec *ex = nd__trainer_exec(tr);
  const nd_graph *g = nd__trainer_graph(tr);
  memset(out, 0, sizeof *out);
  out->processes = nd_exec_procs(ex, &out->process);
  out->tasks = out->tasks_built = g->n_tasks;
  out->tasks_submitted = nd_exec_visited(ex, 0);
  out->bytes_checkpoints = nd_mpi_sum(nd__trainer_checkpoint_bytes(tr));
  out->bytes_sent = nd_mpi_sum(nd_mpi_bytes_sent()) - out->bytes_checkpoints;
  if (out->processes == 1) return 0;
  /* each process's figures, from its share or the whole step alike: every
   * task runs on one process and every byte is sent by one, and each step
   * sends what the first does (nothing is cached across the optimizer's writes) */
  nd_mpi_share sh;
  int failed = nd_mpi_sum(nd_mpi_share_of(g, out->processes, out->process, NULL, &sh) != 0) > 0;
  int64_t sent = failed ? 0 : sh.sent[ND_MPI_PIPELINE] + sh.sent[ND_MPI_DATA_PARALLEL] + sh.sent[ND_MPI_OTHER];
  out->tasks = failed ? -1 : nd_mpi_sum(sh.runs);
  out->bytes_predicted = failed ? -1 : nd_mpi_sum(sent) * nd__trainer_steps_run(tr);
  return 0;
}

int nd_trainer_node(const nd_trainer *tr, int process, nd_node_info *out) {
  const nd_node_info *n = nd_nodes_get(process);
  if (!n) return ND_EINVAL;
  *out = *n;
  const nd_graph *g = nd__trainer_graph(tr);
  out->first_rank = out->last_rank = -1;
  for (int r = 0; r < g->dp * g->pp * g->tp; r++)
    if (nd_mpi_process_of(g, (nd_rank){r / (g->pp * g->tp), r / g->tp % g->pp, r % g->tp}, nd_mpi_size()) == process) {
      if (out->first_rank < 0) out->first_rank = r;
      out->last_rank = r;
    }
  return 0;
}

int nd_trainer_agree_signal(nd_trainer *tr, int sig) {
  (void)tr;
  if (nd_mpi_size() == 1) return sig;
  /* by precedence: a stop wins over a checkpoint-and-continue */
  static const int order[] = {0, SIGUSR1, SIGPIPE, SIGHUP, SIGTERM, SIGINT};
  int mine = 0;
  for (int i = 0; i < (int)(sizeof order / sizeof order[0]); i++)
    if (order[i] == sig) mine = i;
  int agreed = order[nd_mpi_max(mine)];
  if (agreed != 0 && agreed != SIGUSR1) nd_mpi_stop_agreed();
  return agreed;
}

int nd_trainer_agree(nd_trainer *tr, int rc, nd_error *err) {
  (void)tr;
  return nd_mpi_agree(rc, err);
}
