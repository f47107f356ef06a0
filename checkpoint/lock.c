/* One writer per save directory: an advisory lock (flock) on SAVE_DIR/.lock,
 * held while the run lasts. Two runs writing the same step-N would replace
 * each other's checkpoints, and train.keep_checkpoints would delete the
 * other's. The kernel drops the lock with the process however it ends (kill
 * -9 included), so nothing stale is left to clean; the pid in the file only
 * names the holder to the run that is refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "common/error.h"

/* The refusal, with the holder's pid when it has written it already. */
static int held(const char *save_dir, int fd, nd_error *err) {
  char text[32];
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  text[n > 0 ? n : 0] = '\0';
  long pid = strtol(text, NULL, 10);
  char who[48] = "";
  if (pid > 0) snprintf(who, sizeof who, " (pid %ld)", pid);
  return nd__fail(err, ND_EIO, "%s: another ndgraph run%s is writing its checkpoints there (train.save_dir)", save_dir,
                  who);
}

int nd_checkpoint_lock(const char *save_dir, int *fd, nd_error *err) {
  char path[4096], pid[32];
  *fd = -1;
  if (snprintf(path, sizeof path, "%s/.lock", save_dir) >= (int)sizeof path)
    return nd__fail(err, ND_EINVAL, "%s: path too long", save_dir);
  int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0) return nd__fail(err, ND_EIO, "%s: cannot open the lock file: %s", path, strerror(errno));
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    int rc = errno == EWOULDBLOCK ? held(save_dir, f, err) : 0;
    /* otherwise a file system without locks (some network mounts): the
     * lock is advisory, and its absence must not stop a run */
    close(f);
    return rc;
  }
  int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)n, 0) != n) {
    int rc = nd__fail(err, ND_EIO, "%s: cannot write the lock file: %s", path, strerror(errno));
    close(f);
    return rc;
  }
  *fd = f;
  return 0;
}
