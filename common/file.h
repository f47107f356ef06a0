/* Reading a whole file into memory, for the readers that parse one in a go
 * (traces, checkpoint state), or its ends, to tell it from another. */
#ifndef ND_COMMON_FILE_H
#define ND_COMMON_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads path into a malloc'd, NUL-terminated *text (its length in *len when
 * len is given). 0; ND_EIO when it cannot be opened or read; ND_EDATA when it
 * is not a regular file (a FIFO, a directory: never waited on); ND_EINVAL
 * when it holds more than max bytes; ND_ENOMEM. The caller writes the message,
 * naming what the file was meant to be. */
int nd__read_file(const char *path, size_t max, char **text, size_t *len);

/* Mixes into *hash what tells a large file from another cheaply: its size
 * and its first and last ND_FINGERPRINT_BLOCK bytes (all of a smaller
 * file). 0; ND_EIO when it cannot be opened or read; ND_EDATA when it is
 * not a regular file; ND_ENOMEM. */
#define ND_FINGERPRINT_BLOCK (64 << 10)
int nd__file_fingerprint(const char *path, uint64_t *hash);

#endif
