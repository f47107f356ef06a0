/* Builds without StarPU-MPI: one process, and every call of tasks/mpi.h is
 * StarPU's own single-process equivalent. */
#include "tasks/mpi.h"

#include <stdlib.h>
#include <string.h>

int nd_mpi_join(uint64_t hash, const char *source, nd_error *err) {
  (void)hash, (void)source, (void)err;
  return 0;
}
int nd_mpi_agree(int rc, nd_error *err) {
  (void)err;
  return rc;
}
int nd_mpi_apart(int rc, nd_error *err) {
  (void)err;
  return rc;
}
int nd_mpi_is_apart(void) { return 0; }
int nd_mpi_rank(void) { return 0; }
int nd_mpi_size(void) { return 1; }
int nd_mpi_starpu_init(struct starpu_conf *conf) { return starpu_init(conf); }
void nd_mpi_starpu_shutdown(void) { starpu_shutdown(); }
void nd_mpi_register(starpu_data_handle_t h, int64_t tag, int owner) { (void)h, (void)tag, (void)owner; }
int nd_mpi_submit(struct starpu_codelet *cl, int node, starpu_data_handle_t *h, const enum starpu_data_access_mode *m,
                  int n, void (*fill)(struct starpu_task *task, void *arg), void *arg) {
  (void)cl, (void)node, (void)h, (void)m, (void)n, (void)fill, (void)arg;
  return -1; /* never called: nd_mpi_size() is 1 */
}
void nd_mpi_wait(void) { starpu_task_wait_for_all(); }
void nd_mpi_fetch(starpu_data_handle_t h) { (void)h; }
void nd_mpi_forget(starpu_data_handle_t h) { (void)h; }
int64_t nd_mpi_bytes_sent(void) { return 0; }
int64_t nd_mpi_sum(int64_t v) { return v; }
void nd_mpi_barrier(void) {}
int nd_mpi_gather(const void *mine, int64_t n, char **all, int64_t **off) {
  return nd__mpi_gather_alone(mine, n, all, off);
}
void nd_mpi_bcast(void *buf, int64_t n) { (void)buf, (void)n; }
void nd_mpi_allgather(const void *mine, int64_t n, void *all) { memcpy(all, mine, (size_t)n); }
int nd_mpi_max(int v) { return v; }
void nd_mpi_stop_agreed(void) {}
