/* Opening a token dataset (text, 16- or 32-bit token files, the built-in
 * corpus) and cutting it into the sequences of each step. */
#include "data/dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "data/builtin.h"

#define BUILTIN_PREFIX "builtin:"

struct nd_dataset {
  char *name;
  enum nd_data_format format;
  int seq_len;
  int64_t n_tokens;
  const uint8_t *bytes; /* the token stream, either mapped or owned */
  size_t n_bytes;
  void *map; /* non-NULL: bytes is this mmap of map_len bytes */
  size_t map_len;
  uint8_t *owned; /* non-NULL: bytes is this malloc'd buffer */
};

/* Token i of the stream. u16 ids are assembled from bytes so that the file
 * reads as little-endian on any host, with no alignment assumption. */
/* Bytes per token: text 1, tokens-u16 2, tokens-u32 4 (little-endian). */
static int token_bytes(enum nd_data_format f) { return f == ND_FORMAT_TEXT ? 1 : f == ND_FORMAT_TOKENS_U16 ? 2 : 4; }

/* Wider than int32_t: an unchecked u32 id may not fit one. */
static inline int64_t token_at(const nd_dataset *ds, int64_t i) {
  int w = token_bytes(ds->format);
  const uint8_t *p = ds->bytes + w * i;
  uint32_t v = 0;
  for (int k = w - 1; k >= 0; k--) v = v << 8 | p[k];
  return v;
}

/* The largest id among tokens [from, to). On a little-endian host the ids
 * are read in their own width, a loop that vectorizes (12 GB/s here, where
 * token_at's byte loop ran at 1-2 GB/s: a 20 GB token file is checked in
 * seconds); elsewhere through token_at. */
#define CHECK_CHUNK ((int64_t)1 << 20)
#define MAX_IN(type, p, from, to, out)                                                                                 \
  do {                                                                                                                 \
    const type *q_ = (const type *)(const void *)(p);                                                                  \
    type m_ = 0;                                                                                                       \
    _Pragma("omp simd reduction(max : m_)") for (int64_t i_ = (from); i_ < (to); i_++) m_ = q_[i_] > m_ ? q_[i_] : m_; \
    (out) = m_;                                                                                                        \
  } while (0)
static uint32_t largest_id(const nd_dataset *ds, int64_t from, int64_t to) {
  uint32_t m = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  switch (token_bytes(ds->format)) {
  case 1:
    MAX_IN(uint8_t, ds->bytes, from, to, m);
    break;
  case 2:
    MAX_IN(uint16_t, ds->bytes, from, to, m);
    break;
  default:
    MAX_IN(uint32_t, ds->bytes, from, to, m);
  }
#else
  for (int64_t i = from; i < to; i++) {
    uint32_t v = (uint32_t)token_at(ds, i);
    m = v > m ? v : m;
  }
#endif
  return m;
}

static const char *format_name(enum nd_data_format f) {
  return f == ND_FORMAT_TEXT ? "text" : f == ND_FORMAT_TOKENS_U16 ? "tokens-u16" : "tokens-u32";
}

/* Maps a whole regular file read-only. An empty file is not mapped (mmap
 * refuses length 0); the size check that follows rejects it anyway. */
static int map_file(nd_dataset *ds, const char *path, nd_error *err) {
  int rc = 0;
  struct stat st;
  /* non-blocking: opening a FIFO for reading would wait for a writer forever */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return nd__fail(err, ND_EDATA, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0) {
    rc = nd__fail(err, ND_EDATA, "%s: cannot stat: %s", path, strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = nd__fail(err, ND_EDATA, "%s: not a regular file", path);
    goto out;
  }
  ds->n_bytes = (size_t)st.st_size;
  if (ds->n_bytes == 0) {
    ds->bytes = (const uint8_t *)"";
    goto out;
  }
  void *m = mmap(NULL, ds->n_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) {
    rc = nd__fail(err, ND_EDATA, "%s: cannot mmap %zu bytes: %s", path, ds->n_bytes, strerror(errno));
    goto out;
  }
  /* One sequential scan at open, then random sequence reads. */
  (void)madvise(m, ds->n_bytes, MADV_WILLNEED);
  ds->map = m;
  ds->map_len = ds->n_bytes;
  ds->bytes = m;
out:
  close(fd);
  return rc;
}

int nd_dataset_open(nd_dataset **out, const char *spec, enum nd_data_format format, int64_t vocab_size, int seq_len,
                    nd_error *err) {
  int rc = 0;
  nd_dataset *ds = NULL;
  *out = NULL;
  if (!spec || !*spec) return nd__fail(err, ND_EINVAL, "dataset: empty path");
  if (format != ND_FORMAT_TEXT && format != ND_FORMAT_TOKENS_U16 && format != ND_FORMAT_TOKENS_U32)
    return nd__fail(err, ND_EINVAL, "%s: unknown data format %d", spec, (int)format);
  if (vocab_size < 1) return nd__fail(err, ND_EINVAL, "%s: vocab_size %" PRId64 " must be >= 1", spec, vocab_size);
  if (seq_len < 1) return nd__fail(err, ND_EINVAL, "%s: seq_len %d must be >= 1", spec, seq_len);

  ds = calloc(1, sizeof *ds);
  if (!ds || !(ds->name = strdup(spec))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", spec);
    goto fail;
  }
  ds->format = format;
  ds->seq_len = seq_len;

  if (strncmp(spec, BUILTIN_PREFIX, strlen(BUILTIN_PREFIX)) == 0) {
    /* Built-in corpora are text: a byte stream with vocabulary 256. */
    if (format != ND_FORMAT_TEXT) {
      rc = nd__fail(err, ND_EDATA, "%s: built-in datasets are text; set data.format: text", spec);
      goto fail;
    }
    rc = nd__builtin_generate(spec + strlen(BUILTIN_PREFIX), &ds->owned, &ds->n_bytes, err);
    if (rc) goto fail;
    ds->bytes = ds->owned;
  } else {
    rc = map_file(ds, spec, err);
    if (rc) goto fail;
  }

  int width = token_bytes(format);
  if (ds->n_bytes % (size_t)width != 0) {
    if (width == 2)
      rc = nd__fail(err, ND_EDATA, "%s: odd byte count %zu for tokens-u16 (2 bytes per token)", spec, ds->n_bytes);
    else
      rc = nd__fail(err, ND_EDATA, "%s: byte count %zu is not a multiple of 4 for tokens-u32 (4 bytes per token)", spec,
                    ds->n_bytes);
    goto fail;
  }
  ds->n_tokens = (int64_t)(ds->n_bytes / (size_t)width);
  if (ds->n_tokens < (int64_t)seq_len + 1) {
    rc = nd__fail(err, ND_EDATA, "%s: %" PRId64 " tokens (%s), need at least seq_len + 1 = %" PRId64, spec,
                  ds->n_tokens, format_name(format), (int64_t)seq_len + 1);
    goto fail;
  }
  /* Validate every id once here so that the training loop can index
   * embeddings with them unchecked: chunk by chunk at memory speed (a 20 GB
   * token file is a few seconds, not a minute), the first bad id then found
   * in its chunk. Nothing to check when the width cannot exceed the vocabulary. */
  for (int64_t from = 0; vocab_size < ((int64_t)1 << (8 * width)) && from < ds->n_tokens; from += CHECK_CHUNK) {
    int64_t to = ds->n_tokens - from < CHECK_CHUNK ? ds->n_tokens : from + CHECK_CHUNK;
    if ((int64_t)largest_id(ds, from, to) < vocab_size) continue;
    int64_t i = from;
    while (token_at(ds, i) < vocab_size) i++;
    rc = nd__fail(err, ND_EDATA, "%s: token %" PRId64 " at offset %" PRId64 " is >= vocab_size %" PRId64, spec,
                  token_at(ds, i), width * i, vocab_size);
    goto fail;
  }
  *out = ds;
  return 0;
fail:
  nd_dataset_close(ds);
  return rc;
}

void nd_dataset_close(nd_dataset *ds) {
  if (!ds) return;
  if (ds->map) munmap(ds->map, ds->map_len);
  free(ds->owned);
  free(ds->name);
  free(ds);
}

int64_t nd_dataset_tokens(const nd_dataset *ds) { return ds->n_tokens; }

int64_t nd_dataset_sequences(const nd_dataset *ds) { return (ds->n_tokens - 1) / ds->seq_len; }

void nd_dataset_sequence(const nd_dataset *ds, int64_t j, int32_t *inputs, int32_t *targets) {
  int64_t n = nd_dataset_sequences(ds);
  int64_t k = j % n;
  if (k < 0) k += n; /* defensive: callers pass j >= 0, but never index before the start */
  int64_t start = k * ds->seq_len;
  for (int t = 0; t < ds->seq_len; t++) {
    if (inputs) inputs[t] = (int32_t)token_at(ds, start + t);
    if (targets) targets[t] = (int32_t)token_at(ds, start + t + 1);
  }
}

const char *nd_dataset_name(const nd_dataset *ds) { return ds->name; }
