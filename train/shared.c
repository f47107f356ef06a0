/* Under mpirun, what the processes must share besides the configuration
 * (train/processes.c): the data files read under the same paths and the
 * checkpoint resumed from, compared at start. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/file.h"
#include "common/hash.h"
#include "configs/config.h"
#include "tasks/mpi.h"
#include "train/trainer_internal.h"

#define BUILTIN_PREFIX "builtin:"

/* What process 0 holds and every process compares with its own. */
typedef struct shared {
  uint64_t data[2]; /* data.train, data.val */
  uint64_t resumed; /* the checkpoint's files, 0: none */
  int64_t step;
} shared;

/* A data set as read here: a built-in one is the configuration's */
static uint64_t data_fingerprint(const char *spec) {
  uint64_t h = ND_FNV_BASIS;
  if (spec[0] && strncmp(spec, BUILTIN_PREFIX, strlen(BUILTIN_PREFIX)) != 0 && nd__file_fingerprint(spec, &h))
    h = nd__fnv(h, "unreadable", 10);
  return h;
}

/* A checkpoint directory: each regular file's name, size and ends, in name order */
static uint64_t dir_fingerprint(const char *dir) {
  uint64_t h = ND_FNV_BASIS;
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  if (n < 0) return nd__fnv(h, "unreadable", 10);
  for (int i = 0; i < n; i++) {
    char path[ND_PATH_MAX + 264];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    uint64_t file = ND_FNV_BASIS;
    if (nd__file_fingerprint(path, &file) == 0) {
      h = nd__fnv(h, names[i]->d_name, strlen(names[i]->d_name));
      h = nd__fnv(h, &file, sizeof file);
    }
    free(names[i]);
  }
  free(names);
  return h ? h : 1; /* 0 is "resumed from nothing" */
}

int nd_trainer_check_shared(nd_trainer *tr, nd_error *err) {
  if (nd_mpi_size() == 1) return 0;
  const nd_config *c = nd__trainer_config(tr);
  /* a data file missing or bad here stops every process */
  int rc = nd_mpi_agree(nd__trainer_open_data(tr, err), err);
  if (rc) return rc;
  const char *resumed = nd__trainer_resumed(tr), *spec[2] = {c->data.train, c->data.val};
  shared mine = {{data_fingerprint(spec[0]), data_fingerprint(spec[1])},
                 resumed[0] ? dir_fingerprint(resumed) : 0,
                 nd_trainer_steps_done(tr)},
         first = mine;
  nd_mpi_bcast(&first, sizeof first);
  static const char *const keys[2] = {"data.train", "data.val"};
  for (int i = 0; i < 2 && !rc; i++)
    if (mine.data[i] != first.data[i])
      rc = nd__fail(err, ND_EDATA,
                    "%s: %s is not the file process 0 reads (its size, or its first or last %d KiB, differ; mpirun: "
                    "every process must read the same data)",
                    spec[i], keys[i], ND_FINGERPRINT_BLOCK >> 10);
  if (!rc && mine.resumed != first.resumed) {
    long long here = (long long)mine.step, there = (long long)first.step;
    if (resumed[0] && first.resumed)
      rc = nd__fail(err, ND_ECHECKPOINT,
                    "%s: not the checkpoint process 0 resumed from (its files differ; step %lld here, %lld there; "
                    "mpirun: every process must resume from the same checkpoint)",
                    resumed, here, there);
    else if (resumed[0])
      rc = nd__fail(err, ND_ECHECKPOINT,
                    "%s: resumed here at step %lld, but process 0 did not resume (mpirun: every process must be given "
                    "the same --resume)",
                    resumed, here);
    else
      rc = nd__fail(err, ND_ECHECKPOINT,
                    "no checkpoint resumed, but process 0 resumed at step %lld (mpirun: every process must be given the "
                    "same --resume)",
                    there);
  }
  return nd_mpi_agree(rc, err);
}
