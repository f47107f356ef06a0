/* Files that are either absent, or complete: written to PATH.tmp.PID,
 * fsync'd, renamed over PATH, and the directory fsync'd, so that a crash at
 * any moment leaves the old file or the new one, never a torn mix. A symbolic
 * link is followed (the link stays); a device or pipe that PATH names
 * (/dev/stdout) is written in place, never replaced; a directory is an error. */
#ifndef ND_COMMON_ATOMIC_H
#define ND_COMMON_ATOMIC_H

#include <stddef.h>

#include "ndgraph/ndgraph.h"

int nd_write_file_atomic(const char *path, const void *data, size_t len, nd_error *err);

/* The same, streamed: open, write any number of times, then commit (or
 * abort, which removes the temporary file). After a failed write, call abort. */
typedef struct nd__atomic_file {
  int fd;
  char *path, *tmp; /* tmp NULL: written in place */
} nd__atomic_file;

int nd__atomic_open(nd__atomic_file *f, const char *path, nd_error *err);
int nd__atomic_write(nd__atomic_file *f, const void *data, size_t len, nd_error *err);
/* fsync + close + rename + fsync of the directory; frees f in every case
 * (on failure the temporary file is removed). */
int nd__atomic_commit(nd__atomic_file *f, nd_error *err);
void nd__atomic_abort(nd__atomic_file *f);

/* fsync of a directory (or of the one holding path), so that a rename or a
 * creation inside it survives a crash. */
int nd__fsync_parent(const char *path, nd_error *err);
int nd__fsync_dir(const char *dir, nd_error *err);

/* mkdir -p with mode 0777 (before umask). */
int nd__mkdir_p(const char *dir, nd_error *err);

/* rm -rf; a missing path is not an error. */
int nd__remove_tree(const char *path, nd_error *err);

#endif
