/* libFuzzer target for the checkpoint reader (safetensors files); built and
 * run by scripts/fuzz-safetensors.sh. The bytes become a file (a memfd, so
 * nothing touches the disk) that nd_safetensors_open must accept or refuse
 * with a one-line ND_ECHECKPOINT/ND_EIO message; every tensor it accepts is
 * read whole through nd_safetensors_get, so a header that lies about
 * offsets shows as an out-of-bounds read of the mapping. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "checkpoint/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("fuzz.safetensors", 0);
    if (fd < 0) __builtin_trap();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) __builtin_trap();
  nd_safetensors *st = NULL;
  nd_error err = {0};
  int rc = nd_safetensors_open(&st, path, &err);
  if (rc != 0) {
    /* one line naming the file */
    if ((rc != ND_ECHECKPOINT && rc != ND_EIO) || strstr(err.msg, path) == NULL || strchr(err.msg, '\n'))
      __builtin_trap();
    return 0;
  }
  volatile float sink = 0;
  for (int i = 0; i < nd_safetensors_count(st); i++) {
    const char *name = nd_safetensors_name(st, i);
    const float *p;
    int64_t shape[4];
    int ndim;
    if (!name) __builtin_trap();
    rc = nd_safetensors_get(st, name, &p, shape, &ndim, &err);
    if (rc != 0) {
      if (rc != ND_ECHECKPOINT || strchr(err.msg, '\n')) __builtin_trap();
      continue;
    }
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    for (int64_t k = 0; k < n; k++) sink += p[k];
  }
  nd_safetensors_close(st);
  return 0;
}
