/* The StarPU-MPI side of several processes: joining an mpirun launch,
 * StarPU's start through StarPU-MPI, registration and submission. Only the
 * submitting thread calls MPI here; workers never block on it. */
#include "tasks/mpi.h"

#include <mpi.h>
#include <starpu_mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

static int joined, rank, size = 1;
static int starpu_mpi_on;
static int stats_ours;  /* ndgraph asked StarPU-MPI to count, not the user */
static int agreed_stop; /* every process ends here together (a signal, an agreed failure) */
static int apart;       /* this process failed where the others wait on it */

/* The launcher's variables: MPI starts only under one (no cost otherwise). */
static int launched(void) {
  int process;
  return nd_mpi_launched(&process) > 0;
}

/* A process that fails alone would leave the others waiting for its data:
 * a non-zero exit that the processes did not agree on aborts the job (the
 * others stop at once); a clean exit, or an end all processes agreed on
 * (nd_mpi_agree, a signal), finalizes (process 0 may still be writing the
 * checkpoint). */
static void at_exit(int status, void *arg) {
  (void)arg;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (status != 0 && !agreed_stop) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
}

static int start_mpi(nd_error *err) {
  int provided;
  /* StarPU-MPI's thread calls MPI while the submitting thread runs the few
   * collectives of tasks/mpi.h (sums, the trace's gather): both at once */
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return nd__fail(err, ND_ERUNTIME, "mpirun: MPI failed to start in this process");
  if (provided < MPI_THREAD_MULTIPLE)
    return nd__fail(err, ND_ERUNTIME,
                    "mpirun: this MPI does not support MPI_THREAD_MULTIPLE (StarPU-MPI's thread and ndgraph's "
                    "both call it)");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  on_exit(at_exit, NULL);
  joined = 1;
  return 0;
}

/* The processes end together and one line says why: `speaker`'s, the
 * first failure they agreed on (a later agreement, such as the checkpoint
 * written on the way out, keeps it). The others' standard error is closed,
 * so that the line is not repeated, and every exit finalizes instead of
 * aborting the job. */
static int speaker = -1;
static void end_together(int who) {
  agreed_stop = 1;
  if (speaker >= 0) return;
  speaker = who;
  fflush(stderr);
  /* a standard error that cannot be closed only repeats the line */
  if (rank != speaker) (void)!freopen("/dev/null", "w", stderr);
}

int nd_mpi_join(uint64_t hash, const char *source, nd_error *err) {
  if (!launched()) return 0;
  int rc;
  if (!joined && (rc = start_mpi(err))) return rc;
  uint64_t *all = malloc((size_t)size * sizeof *all);
  if (!all) return nd__fail(err, ND_ENOMEM, "mpirun: out of memory");
  MPI_Allgather(&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
  int differs = -1;
  for (int p = 1; p < size && differs < 0; p++)
    if (all[p] != all[0]) differs = p;
  free(all);
  if (differs < 0) return 0;
  /* every process saw the same difference: process 0 compares them all */
  end_together(0);
  return nd__fail(err, ND_ECONFIG,
                  "%s: process %d runs a different configuration or plugins than process 0 (mpirun: every process "
                  "must read the same configuration)",
                  source, differs);
}

/* err's line, prefixed with this process's number */
static void name_process(int rc, nd_error *err) {
  char msg[ND_ERROR_MAX];
  snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : nd_strerror(rc));
  nd__fail(err, rc, "process %d: %s", rank, msg);
}

int nd_mpi_agree(int rc, nd_error *err) {
  if (!joined || apart) return rc;
  nd_error unused;
  if (!err) err = &unused;
  int *all = malloc((size_t)size * sizeof *all);
  if (!all) return nd_mpi_apart(rc ? rc : nd__fail(err, ND_ENOMEM, "mpirun: out of memory"), err);
  MPI_Allgather(&rc, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  int first = -1, failed = 0;
  for (int p = 0; p < size; p++)
    if (all[p]) failed++, first = first < 0 ? p : first;
  int agreed = first < 0 ? 0 : all[first];
  free(all);
  if (!agreed || speaker >= 0) return agreed;
  end_together(first);
  /* a failure of every process is the job's (a layout, say): said as in one process */
  if (rank == first && failed < size)
    name_process(rc, err);
  else if (rank != first)
    nd__fail(err, agreed, "process %d failed (its line says why)", first);
  return agreed;
}

int nd_mpi_apart(int rc, nd_error *err) {
  if (!joined || apart || !rc) return rc;
  nd_error unused = {0};
  if (!err) err = &unused;
  apart = 1;
  name_process(rc, err);
  return rc;
}

int nd_mpi_is_apart(void) { return apart; }

int nd_mpi_rank(void) { return joined ? rank : 0; }
int nd_mpi_size(void) { return joined ? size : 1; }

int nd_mpi_starpu_init(struct starpu_conf *conf) {
  if (!joined) return starpu_init(conf);
  /* StarPU-MPI counts what it sends only when asked before it starts */
  if (!getenv("STARPU_COMM_STATS")) {
    setenv("STARPU_COMM_STATS", "1", 1);
    stats_ours = 1;
  }
  int rc = starpu_mpi_init_conf(NULL, NULL, 0, MPI_COMM_WORLD, conf);
  starpu_mpi_on = rc == 0;
  return rc;
}

void nd_mpi_starpu_shutdown(void) {
  /* its closing barrier would wait for processes that wait on this one */
  if (apart) return;
  if (!starpu_mpi_on) {
    starpu_shutdown();
    return;
  }
  /* the counts were for ndgraph's report: StarPU-MPI's own table of them
   * at shutdown goes only to a user who asked for it */
  int saved = -1, null = stats_ours ? open("/dev/null", O_WRONLY) : -1;
  if (null >= 0) {
    fflush(stderr);
    saved = dup(2);
    dup2(null, 2);
    close(null);
  }
  starpu_mpi_shutdown();
  if (saved >= 0) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
  }
  starpu_mpi_on = 0;
}

void nd_mpi_register(starpu_data_handle_t h, int64_t tag, int owner) { starpu_mpi_data_register(h, tag, owner); }

int nd_mpi_submit(struct starpu_codelet *cl, int node, starpu_data_handle_t *h, const enum starpu_data_access_mode *m,
                  int n, void (*fill)(struct starpu_task *task, void *arg), void *arg) {
  struct starpu_data_descr descr[n > 0 ? n : 1];
  for (int i = 0; i < n; i++) descr[i] = (struct starpu_data_descr){h[i], m[i]};
  struct starpu_task *task =
      starpu_mpi_task_build(MPI_COMM_WORLD, cl, STARPU_EXECUTE_ON_NODE, node, STARPU_DATA_MODE_ARRAY, descr, n, 0);
  int rc = 0;
  if (task) {
    fill(task, arg);
    rc = starpu_task_submit(task);
  }
  int post =
      starpu_mpi_task_post_build(MPI_COMM_WORLD, cl, STARPU_EXECUTE_ON_NODE, node, STARPU_DATA_MODE_ARRAY, descr, n, 0);
  return rc ? rc : post;
}

void nd_mpi_wait(void) {
  if (starpu_mpi_on)
    starpu_mpi_wait_for_all(MPI_COMM_WORLD);
  else
    starpu_task_wait_for_all();
}

void nd_mpi_fetch(starpu_data_handle_t h) {
  if (starpu_mpi_on) starpu_mpi_get_data_on_all_nodes_detached(MPI_COMM_WORLD, h);
}

void nd_mpi_forget(starpu_data_handle_t h) {
  if (!starpu_mpi_on) return;
  if (starpu_mpi_data_get_rank(h) == rank) {
    starpu_mpi_cached_send_clear(h);
  } else {
    starpu_mpi_cached_receive_clear(h);
    starpu_data_invalidate_submit(h);
  }
}

int64_t nd_mpi_bytes_sent(void) {
  if (!starpu_mpi_on) return 0;
  size_t *amounts = calloc((size_t)size, sizeof *amounts);
  if (!amounts) return -1;
  starpu_mpi_comm_amounts_retrieve(amounts);
  int64_t sum = 0;
  for (int p = 0; p < size; p++) sum += (int64_t)amounts[p];
  free(amounts);
  return sum;
}

int64_t nd_mpi_sum(int64_t v) {
  if (!joined) return v;
  int64_t sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

void nd_mpi_barrier(void) {
  if (joined) MPI_Barrier(MPI_COMM_WORLD);
}

int nd_mpi_gather(const void *mine, int64_t n, char **all, int64_t **off) {
  *all = NULL;
  *off = NULL;
  if (!joined) return nd__mpi_gather_alone(mine, n, all, off);
  int count = (int)n, counts[size], displs[size];
  MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int64_t total = 0;
  for (int p = 0; rank == 0 && p < size; p++) displs[p] = (int)total, total += counts[p];
  if (rank == 0) {
    *all = malloc(total > 0 ? (size_t)total : 1);
    *off = calloc((size_t)size + 1, sizeof **off);
    /* the others send regardless: process 0 cannot go on without room */
    if (!*all || !*off) {
      fprintf(stderr, "ndgraph: process 0: out of memory gathering %lld bytes from the processes\n", (long long)total);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int p = 0; p < size; p++) (*off)[p + 1] = (*off)[p] + counts[p];
  }
  MPI_Gatherv(mine, count, MPI_BYTE, *all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  return 0;
}

void nd_mpi_bcast(void *buf, int64_t n) {
  if (joined) MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void nd_mpi_allgather(const void *mine, int64_t n, void *all) {
  if (joined)
    MPI_Allgather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, MPI_COMM_WORLD);
  else
    memcpy(all, mine, (size_t)n);
}

int nd_mpi_max(int v) {
  if (!joined) return v;
  int max = v;
  MPI_Allreduce(&v, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

void nd_mpi_stop_agreed(void) { agreed_stop = 1; }
