/* Opening a token dataset (text, 16- or 32-bit token files, the built-in
 * corpus) and cutting it into the sequences of each step. */
#include "data/dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "data/builtin.h"
#include "ndgraph/tokenizer.h"

#define BUILTIN_PREFIX "builtin:"

struct nd_dataset {
  char *name;
  enum nd_data_format format;
  int seq_len;
  int64_t vocab_size;
  int64_t n_tokens;
  size_t n_bytes; /* when opened */
  /* A file is read with pread, never mapped: a file cut short under a
   * mapping kills the process with SIGBUS, a short read is an error. */
  int fd;         /* -1: a built-in corpus, in owned */
  uint8_t *owned; /* a built-in corpus's bytes */
  /* the first failed read, for nd_dataset_failure: 0 none, 1 being
   * written, 2 written (reads run on several workers at once) */
  atomic_int failed;
  nd_error failure;
};

/* Bytes per token: text 1, tokens-u16 2, tokens-u32 4 (little-endian). */
static int token_bytes(enum nd_data_format f) { return f == ND_FORMAT_TEXT ? 1 : f == ND_FORMAT_TOKENS_U16 ? 2 : 4; }

/* Token i of the little-endian ids at p, assembled from bytes so that the
 * file reads the same on any host, with no alignment assumption. Wider than
 * int32_t: an unchecked u32 id may not fit one. */
static inline int64_t token_at(const uint8_t *p, int w, int64_t i) {
  p += w * i;
  uint32_t v = 0;
  for (int k = w - 1; k >= 0; k--) v = v << 8 | p[k];
  return v;
}

/* The largest of the n ids at p. On a little-endian host the ids are read
 * in their own width, a loop that vectorizes (12 GB/s here, where token_at's
 * byte loop ran at 1-2 GB/s: a 20 GB token file is checked in seconds);
 * elsewhere through token_at. */
#define CHECK_CHUNK ((int64_t)1 << 20)
#define MAX_IN(type, p, n, out)                                                                                  \
  do {                                                                                                           \
    const type *q_ = (const type *)(const void *)(p);                                                            \
    type m_ = 0;                                                                                                 \
    _Pragma("omp simd reduction(max : m_)") for (int64_t i_ = 0; i_ < (n); i_++) m_ = q_[i_] > m_ ? q_[i_] : m_; \
    (out) = m_;                                                                                                  \
  } while (0)
static uint32_t largest_id(const uint8_t *p, int w, int64_t n) {
  uint32_t m = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  switch (w) {
  case 1:
    MAX_IN(uint8_t, p, n, m);
    break;
  case 2:
    MAX_IN(uint16_t, p, n, m);
    break;
  default:
    MAX_IN(uint32_t, p, n, m);
  }
#else
  for (int64_t i = 0; i < n; i++) {
    uint32_t v = (uint32_t)token_at(p, w, i);
    m = v > m ? v : m;
  }
#endif
  return m;
}

/* Ids that cannot reach vocab_size in the format's width need no check. */
static int unchecked(const nd_dataset *ds) { return ds->vocab_size >= ((int64_t)1 << (8 * token_bytes(ds->format))); }

/* The one range check, at open and at every read, so that both refuse the
 * same ids: every id of tokens [first, first + n), held at p, is below
 * vocab_size; otherwise ND_EDATA naming the first that is not, its byte
 * offset, and `when`. */
static int check_ids(const nd_dataset *ds, const uint8_t *p, int64_t first, int64_t n, const char *when,
                     nd_error *err) {
  int w = token_bytes(ds->format);
  if (unchecked(ds) || (int64_t)largest_id(p, w, n) < ds->vocab_size) return 0;
  int64_t i = 0;
  while (token_at(p, w, i) < ds->vocab_size) i++;
  return nd__fail(err, ND_EDATA, "%s: token %" PRId64 " at offset %" PRId64 " is >= vocab_size %" PRId64 "%s", ds->name,
                  token_at(p, w, i), w * (first + i), ds->vocab_size, when);
}

/* Tokens [first, first + n) of the stream: a pointer into a built-in
 * corpus, or read from the file into buf (n tokens' bytes). A file that has
 * shrunk since it was opened reads short: ND_EDATA saying so. */
static const uint8_t *window(const nd_dataset *ds, int64_t first, int64_t n, uint8_t *buf, nd_error *err) {
  int w = token_bytes(ds->format);
  if (ds->fd < 0) return ds->owned + w * first;
  size_t len = (size_t)(w * n), got = 0;
  off_t at = (off_t)(w * first);
  while (got < len) {
    ssize_t r = pread(ds->fd, buf + got, len - got, at + (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      nd__fail(err, ND_EDATA, "%s: cannot read %zu bytes at offset %lld: %s", ds->name, len, (long long)at,
               strerror(errno));
      return NULL;
    }
    if (r == 0) {
      struct stat st;
      long long now = fstat(ds->fd, &st) == 0 ? (long long)st.st_size : -1;
      nd__fail(err, ND_EDATA,
               "%s: the file shrank to %lld bytes while in use (%zu when opened): cannot read bytes %lld to %lld",
               ds->name, now, ds->n_bytes, (long long)at, (long long)(at + (off_t)len));
      return NULL;
    }
    got += (size_t)r;
  }
  return buf;
}

static const char *format_name(enum nd_data_format f) {
  return f == ND_FORMAT_TEXT ? "text" : f == ND_FORMAT_TOKENS_U16 ? "tokens-u16" : "tokens-u32";
}

/* Opens a regular file for reading and notes its size. */
static int open_file(nd_dataset *ds, const char *path, nd_error *err) {
  struct stat st;
  /* non-blocking: opening a FIFO for reading would wait for a writer forever */
  ds->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (ds->fd < 0) return nd__fail(err, ND_EDATA, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(ds->fd, &st) != 0) return nd__fail(err, ND_EDATA, "%s: cannot stat: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return nd__fail(err, ND_EDATA, "%s: not a regular file", path);
  ds->n_bytes = (size_t)st.st_size;
  return 0;
}

/* Every id once, chunk by chunk (a 20 GB token file is a few seconds, not a
 * minute), so that a bad file stops the run before its first step. */
static int check_all(const nd_dataset *ds, nd_error *err) {
  if (unchecked(ds)) return 0;
  int w = token_bytes(ds->format);
  uint8_t *buf = ds->fd < 0 ? NULL : malloc((size_t)(w * CHECK_CHUNK));
  if (ds->fd >= 0 && !buf) return nd__fail(err, ND_ENOMEM, "%s: out of memory", ds->name);
  int rc = 0;
  for (int64_t from = 0; !rc && from < ds->n_tokens; from += CHECK_CHUNK) {
    int64_t n = ds->n_tokens - from < CHECK_CHUNK ? ds->n_tokens - from : CHECK_CHUNK;
    const uint8_t *p = window(ds, from, n, buf, err);
    rc = p ? check_ids(ds, p, from, n, "", err) : ND_EDATA;
  }
  free(buf);
  return rc;
}

/* The text's ids, as u32 in ds->owned: the end-of-text id (where the
 * tokenizer has one) then the ids of the whole text, as `ndgraph tokenize`
 * writes a one-document file. The text is ds->owned (a built-in corpus) or
 * the file open at ds->fd, read whole. */
static int tokenize(nd_dataset *ds, const char *spec, const char *path, nd_error *err) {
  nd_tokenizer *tok = NULL;
  const char *text = (const char *)ds->owned;
  char *read_in = NULL; /* a file's text, read here */
  uint32_t *ids = NULL;
  size_t len = ds->n_bytes, n = 0, cap = 0;
  int rc = nd_tokenizer_load(path, &tok, err);
  if (rc) return rc;
  if (nd_tokenizer_vocab_size(tok) != ds->vocab_size) {
    rc = nd__fail(err, ND_EINVAL, "%s: a vocabulary of %" PRId64 " ids, but model.vocab_size is %" PRId64, path,
                  nd_tokenizer_vocab_size(tok), ds->vocab_size);
    goto done;
  }
  if (ds->fd >= 0) {
    if (!(text = read_in = malloc(len ? len : 1))) {
      rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", spec);
      goto done;
    }
    for (size_t got = 0; got < len;) {
      ssize_t r = pread(ds->fd, read_in + got, len - got, (off_t)got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        rc = nd__fail(err, ND_EDATA, "%s: cannot read: %s", spec, r < 0 ? strerror(errno) : "the file shrank");
        goto done;
      }
      got += (size_t)r;
    }
  }
  if (!(ids = malloc((cap = 1024) * sizeof *ids))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", spec);
    goto done;
  }
  if (nd_tokenizer_eot(tok) >= 0) ids[n++] = (uint32_t)nd_tokenizer_eot(tok);
  if ((rc = nd_tokenizer_encode(tok, text, len, &ids, &n, &cap, err))) goto done;
  /* from here on a built-in corpus: ids in memory, the file no longer read */
  if (ds->fd >= 0) close(ds->fd);
  ds->fd = -1;
  free(ds->owned);
  ds->owned = (uint8_t *)ids, ds->n_bytes = n * sizeof *ids, ids = NULL;
  for (size_t i = 0; i < n; i++) { /* little-endian, as the files */
    uint32_t v = ((uint32_t *)ds->owned)[i];
    uint8_t *p = ds->owned + 4 * i;
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
  }
done:
  free(read_in);
  free(ids);
  nd_tokenizer_free(tok);
  return rc;
}

static int open_dataset(nd_dataset **out, const char *spec, enum nd_data_format format, int64_t vocab_size,
                        int seq_len, const char *tokenizer, nd_error *err) {
  int rc = 0;
  nd_dataset *ds = NULL;
  *out = NULL;
  if (!spec || !*spec) return nd__fail(err, ND_EINVAL, "dataset: empty path");
  if (format != ND_FORMAT_TEXT && format != ND_FORMAT_TOKENS_U16 && format != ND_FORMAT_TOKENS_U32)
    return nd__fail(err, ND_EINVAL, "%s: unknown data format %d", spec, (int)format);
  if (vocab_size < 1) return nd__fail(err, ND_EINVAL, "%s: vocab_size %" PRId64 " must be >= 1", spec, vocab_size);
  if (seq_len < 1) return nd__fail(err, ND_EINVAL, "%s: seq_len %d must be >= 1", spec, seq_len);

  ds = calloc(1, sizeof *ds);
  if (ds) ds->fd = -1; /* before any failure: nd_dataset_close closes it */
  if (!ds || !(ds->name = strdup(spec))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", spec);
    goto fail;
  }
  ds->format = format;
  ds->seq_len = seq_len;
  ds->vocab_size = vocab_size;

  if (strncmp(spec, BUILTIN_PREFIX, strlen(BUILTIN_PREFIX)) == 0) {
    /* Built-in corpora are text: a byte stream (or a tokenizer's text). */
    if (format != ND_FORMAT_TEXT) {
      rc = nd__fail(err, ND_EDATA, "%s: built-in datasets are text; set data.format: text", spec);
      goto fail;
    }
    rc = nd__builtin_generate(spec + strlen(BUILTIN_PREFIX), &ds->owned, &ds->n_bytes, err);
    if (rc) goto fail;
  } else {
    rc = open_file(ds, spec, err);
    if (rc) goto fail;
  }
  if (tokenizer) {
    if ((rc = tokenize(ds, spec, tokenizer, err))) goto fail;
    ds->format = format = ND_FORMAT_TOKENS_U32;
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
  if ((rc = check_all(ds, err))) goto fail;
  *out = ds;
  return 0;
fail:
  nd_dataset_close(ds);
  return rc;
}

int nd_dataset_open(nd_dataset **out, const char *spec, enum nd_data_format format, int64_t vocab_size, int seq_len,
                    nd_error *err) {
  return open_dataset(out, spec, format, vocab_size, seq_len, NULL, err);
}

int nd_dataset_open_tokenized(nd_dataset **out, const char *spec, const char *tokenizer, int64_t vocab_size,
                              int seq_len, nd_error *err) {
  return open_dataset(out, spec, ND_FORMAT_TEXT, vocab_size, seq_len, tokenizer, err);
}

void nd_dataset_close(nd_dataset *ds) {
  if (!ds) return;
  if (ds->fd >= 0) close(ds->fd);
  free(ds->owned);
  free(ds->name);
  free(ds);
}

int64_t nd_dataset_tokens(const nd_dataset *ds) { return ds->n_tokens; }

int64_t nd_dataset_sequences(const nd_dataset *ds) { return (ds->n_tokens - 1) / ds->seq_len; }

/* Sequences k .. k + count - 1, all before the stream's end: one read of
 * their count * T + 1 tokens, checked, then cut into rows. */
static int read_run(nd_dataset *ds, int64_t k, int64_t count, int32_t *inputs, int32_t *targets, nd_error *err) {
  int w = token_bytes(ds->format), T = ds->seq_len;
  int64_t first = k * T, n = count * T + 1;
  uint8_t *buf = ds->fd < 0 ? NULL : malloc((size_t)(w * n));
  if (ds->fd >= 0 && !buf) return nd__fail(err, ND_ENOMEM, "%s: out of memory", ds->name);
  const uint8_t *p = window(ds, first, n, buf, err);
  int rc = !p ? ND_EDATA : check_ids(ds, p, first, n, " (the file changed while in use)", err);
  for (int64_t r = 0; !rc && r < count; r++)
    for (int t = 0; t < T; t++) {
      if (inputs) inputs[r * T + t] = (int32_t)token_at(p, w, r * T + t);
      if (targets) targets[r * T + t] = (int32_t)token_at(p, w, r * T + t + 1);
    }
  free(buf);
  return rc;
}

int nd_dataset_read(nd_dataset *ds, int64_t j, int count, int32_t *inputs, int32_t *targets) {
  int64_t n = nd_dataset_sequences(ds), T = ds->seq_len;
  nd_error err = {0};
  int rc = 0;
  for (int64_t i = 0; !rc && i < count;) {
    int64_t k = (j + i) % n;
    if (k < 0) k += n; /* defensive: callers pass j >= 0, but never index before the start */
    int64_t run = count - i < n - k ? count - i : n - k; /* up to the last whole sequence, then from the start */
    rc = read_run(ds, k, run, inputs ? inputs + i * T : NULL, targets ? targets + i * T : NULL, &err);
    i += run;
  }
  if (!rc) return 0;
  /* ids that index nothing out of range, for the tasks that still run on them */
  if (inputs) memset(inputs, 0, (size_t)count * (size_t)T * sizeof *inputs);
  if (targets) memset(targets, 0, (size_t)count * (size_t)T * sizeof *targets);
  int expect = 0;
  if (atomic_compare_exchange_strong(&ds->failed, &expect, 1)) {
    ds->failure = err;
    atomic_store(&ds->failed, 2);
  }
  return rc;
}

int nd_dataset_failure(nd_dataset *ds, nd_error *err) {
  if (!ds || atomic_load(&ds->failed) != 2) return 0;
  int rc = ds->failure.code;
  nd__fail(err, rc, "%s", ds->failure.msg);
  atomic_store(&ds->failed, 0);
  return rc;
}

int nd_dataset_failed(const nd_dataset *ds) { return atomic_load(&ds->failed) != 0; }

const char *nd_dataset_name(const nd_dataset *ds) { return ds->name; }
