/* Keeping a save directory tidy and usable: the temporaries of processes
 * that died while writing, the retention of the newest complete checkpoints,
 * and the check at start that checkpoints can be written at all. None of it
 * ever touches a complete step-N that is to be kept. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/atomic.h"
#include "checkpoint/checkpoint.h"
#include "common/error.h"

/* ".step-N.KIND-PID": the step, the kind ("tmp", "old", "del") and the pid. */
static int hidden_name(const char *name, int64_t *step, char kind[4], long *pid) {
  const char *rest;
  if (!nd__checkpoint_step_of(name, ".step-", step, &rest) || strlen(rest) < 6 || rest[0] != '.' || rest[4] != '-')
    return 0;
  memcpy(kind, rest + 1, 3);
  kind[3] = '\0';
  char *end;
  errno = 0;
  *pid = strtol(rest + 5, &end, 10);
  return rest[5] >= '0' && rest[5] <= '9' && !*end && !errno && *pid > 0;
}

/* Gone, or this very process before it wrote anything (a reused pid). On
 * another machine sharing the directory a pid means nothing: callers of a
 * shared save_dir run one writer at a time. */
static int process_gone(long pid) { return pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno == ESRCH); }

int nd_checkpoint_clean_stale(const char *save_dir, int *removed, int *restored, nd_error *err) {
  *removed = *restored = 0;
  DIR *d = opendir(save_dir);
  /* nothing there yet, or a path that cannot be one: nd_checkpoint_check_dir says why */
  if (!d)
    return errno == ENOENT || errno == ENOTDIR
               ? 0
               : nd__fail(err, ND_EIO, "%s: cannot open directory: %s", save_dir, strerror(errno));
  int rc = 0;
  for (struct dirent *de; !rc && (de = readdir(d));) {
    int64_t step;
    long pid;
    char kind[4], path[4096], final[4096];
    if (!hidden_name(de->d_name, &step, kind, &pid) || !process_gone(pid)) continue;
    if (strcmp(kind, "tmp") && strcmp(kind, "old") && strcmp(kind, "del")) continue;
    if (snprintf(path, sizeof path, "%s/%s", save_dir, de->d_name) >= (int)sizeof path) continue;
    snprintf(final, sizeof final, "%s/step-%" PRId64, save_dir, step);
    struct stat st;
    /* a writer killed between its two renames: the aside copy is the only one */
    if (strcmp(kind, "old") == 0 && lstat(final, &st) != 0 && errno == ENOENT && !nd__checkpoint_missing(path)) {
      if (rename(path, final) != 0)
        rc = nd__fail(err, ND_EIO, "%s: cannot put back as %s: %s", path, final, strerror(errno));
      else
        (*restored)++;
      continue;
    }
    if (!(rc = nd__remove_tree(path, err))) (*removed)++;
  }
  closedir(d);
  return rc;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The steps of the complete checkpoints in save_dir, ascending (caller frees). */
static int complete_steps(const char *save_dir, int64_t **out, int *n, nd_error *err) {
  *out = NULL;
  *n = 0;
  int cap = 0;
  DIR *d = opendir(save_dir);
  if (!d) return nd__fail(err, ND_EIO, "%s: cannot open directory: %s", save_dir, strerror(errno));
  for (struct dirent *de; (de = readdir(d));) {
    int64_t step;
    char dir[4096];
    if (!nd__checkpoint_step_of(de->d_name, "step-", &step, NULL)) continue;
    if (snprintf(dir, sizeof dir, "%s/%s", save_dir, de->d_name) >= (int)sizeof dir || nd__checkpoint_missing(dir))
      continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      int64_t *p = realloc(*out, (size_t)cap * sizeof *p);
      if (!p) {
        closedir(d);
        return nd__fail(err, ND_ENOMEM, "%s: out of memory listing checkpoints", save_dir);
      }
      *out = p;
    }
    (*out)[(*n)++] = step;
  }
  closedir(d);
  if (*n > 1) qsort(*out, (size_t)*n, sizeof **out, cmp_i64);
  return 0;
}

int nd_checkpoint_prune(const char *save_dir, int64_t newest, int64_t keep, int *removed, nd_error *err) {
  int64_t *steps;
  int n, rc;
  *removed = 0;
  if (keep < 1) return 0;
  if ((rc = complete_steps(save_dir, &steps, &n, err))) return rc;
  /* newer ones (another run's, say) are neither counted nor touched */
  while (n > 0 && steps[n - 1] > newest) n--;
  /* renamed out of the step-N namespace first: a kill half way through the
   * removal leaves a hidden .del directory (cleaned at the next start), never
   * a step-N that looks like a checkpoint but lacks files */
  for (int i = 0; i + keep < n && !rc; i++) {
    char final[4096], del[4096];
    snprintf(final, sizeof final, "%s/step-%" PRId64, save_dir, steps[i]);
    snprintf(del, sizeof del, "%s/.step-%" PRId64 ".del-%ld", save_dir, steps[i], (long)getpid());
    if (rename(final, del) != 0)
      rc = nd__fail(err, ND_EIO, "%s: cannot remove: %s", final, strerror(errno));
    else if (!(rc = nd__remove_tree(del, err)))
      (*removed)++;
  }
  free(steps);
  return rc;
}

int nd_checkpoint_newer_incomplete(const char *save_dir, int64_t step, int64_t *newer, const char **missing) {
  DIR *d = opendir(save_dir);
  *newer = -1;
  *missing = NULL;
  if (!d) return 0;
  for (struct dirent *de; (de = readdir(d));) {
    int64_t s;
    char dir[4096];
    const char *m;
    if (!nd__checkpoint_step_of(de->d_name, "step-", &s, NULL) || s <= step || s <= *newer) continue;
    if (snprintf(dir, sizeof dir, "%s/%s", save_dir, de->d_name) >= (int)sizeof dir ||
        !(m = nd__checkpoint_missing(dir)))
      continue;
    *newer = s;
    *missing = m;
  }
  closedir(d);
  return *newer >= 0;
}

int nd_checkpoint_check_dir(const char *save_dir, uint64_t *avail, nd_error *err) {
  char probe[4096];
  *avail = UINT64_MAX;
  int rc = nd__mkdir_p(save_dir, err);
  if (rc) return rc;
  snprintf(probe, sizeof probe, "%s/.probe-%ld", save_dir, (long)getpid());
  int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || close(fd) != 0 || unlink(probe) != 0)
    return nd__fail(err, ND_EIO, "%s: cannot write checkpoints there (train.save_dir): %s", save_dir, strerror(errno));
  struct statvfs vfs;
  if (statvfs(save_dir, &vfs) == 0) *avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
  return 0;
}
