/* Reading a whole file into memory, or its ends. */
#include "common/file.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "ndgraph/ndgraph.h"

/* A regular file opened for reading in *fd: ND_EIO where it cannot be
 * opened, ND_EDATA where it is something else. Non-blocking: opening a FIFO
 * would wait for a writer forever. */
static int open_regular(const char *path, int *fd) {
  struct stat st;
  if ((*fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) return ND_EIO;
  if (fstat(*fd, &st) == 0 && S_ISREG(st.st_mode)) return 0;
  close(*fd);
  return ND_EDATA;
}

int nd__read_file(const char *path, size_t max, char **text, size_t *len) {
  *text = NULL;
  int fd, rc = open_regular(path, &fd);
  if (rc) return rc;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return ND_EIO;
  }
  long size = -1;
  rc = ND_EIO;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET) != 0) goto done;
  rc = ND_EINVAL;
  if ((unsigned long)size > max) goto done;
  rc = ND_ENOMEM;
  char *buf = malloc((size_t)size + 1);
  if (!buf) goto done;
  rc = ND_EIO;
  if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
    free(buf);
    goto done;
  }
  buf[size] = '\0';
  *text = buf;
  if (len) *len = (size_t)size;
  rc = 0;
done:
  fclose(f);
  return rc;
}

int nd__file_fingerprint(const char *path, uint64_t *hash) {
  int fd, rc = open_regular(path, &fd);
  struct stat st;
  if (rc) return rc;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return ND_EIO;
  }
  char *block = malloc(ND_FINGERPRINT_BLOCK);
  if (!block) {
    close(fd);
    return ND_ENOMEM;
  }
  int64_t size = (int64_t)st.st_size;
  *hash = nd__fnv(*hash, &size, sizeof size);
  /* the last block starts after the first, so a small file is read once */
  int64_t first = size < ND_FINGERPRINT_BLOCK ? size : ND_FINGERPRINT_BLOCK;
  int64_t last_at = size - ND_FINGERPRINT_BLOCK > first ? size - ND_FINGERPRINT_BLOCK : first;
  int64_t spans[2][2] = {{0, first}, {last_at, size - last_at}};
  for (int s = 0; s < 2 && !rc; s++) {
    ssize_t n = spans[s][1] ? pread(fd, block, (size_t)spans[s][1], (off_t)spans[s][0]) : 0;
    if (n != (ssize_t)spans[s][1])
      rc = ND_EIO;
    else
      *hash = nd__fnv(*hash, block, (size_t)n);
  }
  free(block);
  close(fd);
  return rc;
}
