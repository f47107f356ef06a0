/* Writing a file so that it is there whole or not at all: a temporary
 * beside it, fsync, rename, fsync of the directory. */
#include "common/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

int nd__fsync_dir(const char *dir, nd_error *err) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return nd__fail(err, ND_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
  int rc = 0;
  /* Some file systems cannot fsync a directory (EINVAL): nothing more to do there. */
  if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
    rc = nd__fail(err, ND_EIO, "%s: cannot fsync directory: %s", dir, strerror(errno));
  close(fd);
  return rc;
}

int nd__fsync_parent(const char *path, nd_error *err) {
  const char *slash = strrchr(path, '/');
  if (!slash) return nd__fsync_dir(".", err);
  if (slash == path) return nd__fsync_dir("/", err);
  char *dir = strndup(path, (size_t)(slash - path));
  if (!dir) return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  int rc = nd__fsync_dir(dir, err);
  free(dir);
  return rc;
}

/* What stands at path, into *real: a device or a pipe (`-o /dev/stdout`,
 * `>(gzip > x)`, *in_place set) is written in place, as a user who names one
 * expects, and never replaced by a file; a symbolic link to a file stays, its
 * target (*real) gets the content, with the mode it had (*mode; 0 for a new
 * file). A directory, a socket, a block device, a symbolic link to nothing
 * and a file its user may not write are refused: replacing one by rename
 * would need only the directory's permission, and the user asked for it to
 * stay (a mode without write bits says so even to root, whom access()
 * lets write anything). */
static int resolve(const char *path, char **real, int *in_place, mode_t *mode, nd_error *err) {
  struct stat st, link;
  *real = NULL;
  *mode = 0;
  if (!*path) return nd__fail(err, ND_EIO, "the output file's name is empty");
  int exists = stat(path, &st) == 0;
  *in_place = exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
  if (!exists && lstat(path, &link) == 0 && S_ISLNK(link.st_mode))
    return nd__fail(err, ND_EIO, "%s: a symbolic link to nothing, not a file to write", path);
  if (exists && !S_ISREG(st.st_mode) && !*in_place)
    return nd__fail(err, ND_EIO, "%s: %s, not a file to write", path,
                    S_ISDIR(st.st_mode) ? "a directory" : "a socket or block device");
  if (exists && S_ISREG(st.st_mode)) {
    if (!(st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)))
      return nd__fail(err, ND_EIO, "%s: not writable (read-only)", path);
    if (access(path, W_OK) != 0) return nd__fail(err, ND_EIO, "%s: not writable (%s)", path, strerror(errno));
    *mode = st.st_mode & 07777;
  }
  *real = exists && S_ISREG(st.st_mode) ? realpath(path, NULL) : strdup(path);
  if (!*real) return nd__fail(err, errno == ENOMEM ? ND_ENOMEM : ND_EIO, "%s: %s", path, strerror(errno));
  return 0;
}

/* A FIFO without a reader is an error, not a hang. */
static int open_in_place(nd__atomic_file *f, nd_error *err) {
  f->fd = open(f->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (f->fd < 0)
    return nd__fail(err, ND_EIO, "%s: cannot open: %s", f->path,
                    errno == ENXIO ? "a FIFO that nobody reads" : strerror(errno));
  fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) & ~O_NONBLOCK);
  return 0;
}

/* An existing file is replaced by a new one created beside it: a directory
 * that takes no new files (/proc: creating one there says "No such file or
 * directory", though the file is there) is named as the reason. */
static int replace_failed(const char *path, int errnum, nd_error *err) {
  if (errnum == ENOENT) return nd__fail(err, ND_EIO, "%s: cannot replace: its directory takes no new files", path);
  return nd__fail(err, ND_EIO, "%s: cannot replace: %s", path, strerror(errnum));
}

int nd__atomic_open(nd__atomic_file *f, const char *path, nd_error *err) {
  int in_place, rc;
  mode_t mode;
  f->fd = -1;
  f->tmp = NULL;
  if ((rc = resolve(path, &f->path, &in_place, &mode, err))) return rc;
  if (in_place) {
    rc = open_in_place(f, err);
  } else if (asprintf(&f->tmp, "%s.tmp.%ld", f->path, (long)getpid()) < 0) {
    f->tmp = NULL;
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  } else if ((f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
    rc =
        mode ? replace_failed(path, errno, err) : nd__fail(err, ND_EIO, "%s: cannot create: %s", path, strerror(errno));
  } else if (mode && fchmod(f->fd, mode) != 0) {
    /* the replacement keeps the mode of the file it replaces (0600 stays private) */
    rc = nd__fail(err, ND_EIO, "%s: cannot keep its mode: %s", path, strerror(errno));
  }
  if (rc) nd__atomic_abort(f);
  return rc;
}

int nd_check_writable(const char *path, nd_error *err) {
  char *real;
  mode_t mode;
  int in_place, rc = resolve(path, &real, &in_place, &mode, err);
  if (!rc && !in_place) {
    /* a new file, or one replaced by rename: its directory takes the temporary */
    char *slash = strrchr(real, '/');
    const char *dir = slash == real ? "/" : slash ? (*slash = '\0', real) : ".";
    struct stat st;
    /* a file where the directory should be: what creating it would say, not
     * access()'s "Permission denied" (a plain file has no search right) */
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
      rc = nd__fail(err, ND_EIO, "%s: cannot create: %s", path, strerror(ENOTDIR));
    else if (access(dir, W_OK | X_OK) != 0)
      rc = nd__fail(err, ND_EIO, "%s: cannot create: %s", path,
                    errno == ENOENT ? "No such file or directory" : strerror(errno));
  }
  free(real);
  return rc;
}

int nd__atomic_write(nd__atomic_file *f, const void *data, size_t len, nd_error *err) {
  const char *p = data;
  while (len > 0) {
    /* Large writes may be split by the kernel; write() is limited to ~2 GiB. */
    size_t chunk = len > (1u << 30) ? (1u << 30) : len;
    ssize_t w = write(f->fd, p, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return nd__fail(err, ND_EIO, "%s: cannot write: %s", f->path, strerror(errno));
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static void atomic_free(nd__atomic_file *f) {
  free(f->path);
  free(f->tmp);
  f->path = f->tmp = NULL;
  f->fd = -1;
}

void nd__atomic_abort(nd__atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->tmp) unlink(f->tmp);
  atomic_free(f);
}

int nd__atomic_commit(nd__atomic_file *f, nd_error *err) {
  int rc = 0;
  if (!f->tmp) {
    /* written in place: a pipe or a device has nothing to sync or rename */
    if (close(f->fd) != 0) rc = nd__fail(err, ND_EIO, "%s: cannot close: %s", f->path, strerror(errno));
    f->fd = -1;
    atomic_free(f);
    return rc;
  }
  if (fsync(f->fd) != 0) {
    rc = nd__fail(err, ND_EIO, "%s: cannot sync to disk: %s", f->path, strerror(errno));
    goto fail;
  }
  /* close() can report a delayed write error (NFS): check it. */
  int fd = f->fd;
  f->fd = -1;
  if (close(fd) != 0) {
    rc = nd__fail(err, ND_EIO, "%s: cannot close: %s", f->path, strerror(errno));
    goto fail;
  }
  if (rename(f->tmp, f->path) != 0) {
    rc = nd__fail(err, ND_EIO, "%s: cannot move %s into place: %s", f->path, f->tmp, strerror(errno));
    goto fail;
  }
  rc = nd__fsync_parent(f->path, err);
  atomic_free(f);
  return rc;
fail:
  nd__atomic_abort(f);
  return rc;
}

int nd_write_file_atomic(const char *path, const void *data, size_t len, nd_error *err) {
  nd__atomic_file f;
  int rc = nd__atomic_open(&f, path, err);
  if (rc) return rc;
  rc = nd__atomic_write(&f, data, len, err);
  if (rc) {
    nd__atomic_abort(&f);
    return rc;
  }
  return nd__atomic_commit(&f, err);
}

int nd__mkdir_p(const char *dir, nd_error *err) {
  int rc = 0;
  if (!dir || !*dir) return nd__fail(err, ND_EINVAL, "mkdir: empty directory name");
  char *p = strdup(dir);
  if (!p) return nd__fail(err, ND_ENOMEM, "%s: out of memory", dir);
  /* Create each prefix in turn; EEXIST is fine as long as it is a directory. */
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s != '\0') continue;
    char c = *s;
    *s = '\0';
    struct stat st;
    if (mkdir(p, 0777) != 0 && (errno != EEXIST || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))) {
      rc = nd__fail(err, ND_EIO, "%s: cannot create directory: %s", p,
                    errno == EEXIST ? "exists and is not a directory" : strerror(errno));
      goto out;
    }
    *s = c;
    if (c == '\0') break;
  }
out:
  free(p);
  return rc;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 ? 0 : -1;
}

int nd__remove_tree(const char *path, nd_error *err) {
  struct stat st;
  if (lstat(path, &st) != 0 && errno == ENOENT) return 0;
  /* Depth first, and never following symbolic links out of the tree. */
  if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return nd__fail(err, ND_EIO, "%s: cannot remove: %s", path, strerror(errno));
  return 0;
}
