/* `ndgraph tokenize`: documents of any size, read in chunks. A chunk ends
 * at a space between two printable ASCII characters ("a b" is cut before the
 * space) when the tokenizer's pipeline provably cuts a piece there too, so
 * that the chunks' ids are the whole document's (docs/text.md, *Streaming*);
 * otherwise a document is read whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic.h"
#include "common/error.h"
#include "text/tokenizer.h"

#define CHUNK (64u << 10)

/* The pre-tokenizer regexes (GPT-2's, Llama 3's, Qwen 2's) that end every
 * piece before a space that follows a non-space and precedes one: no
 * alternative reaches past such a space or looks beyond it, and the matches
 * tile the text, so the search after the cut starts there either way. */
static const char *const cutting_regexes[] = {
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};

static int regex_cuts(const nd__pattern *p) {
  for (size_t i = 0; p->re && i < sizeof cutting_regexes / sizeof cutting_regexes[0]; i++)
    if (!strcmp(p->literal, cutting_regexes[i])) return 1;
  return 0;
}

/* Without a pre-tokenizer a document is one word: a cut is safe when no
 * token has the space (as the normalizers write it) after another
 * character, for then no merge joins the two sides and BPE runs on each
 * alone as on the whole. */
static int no_token_across(const nd_tokenizer *tok, const char *space) {
  size_t sl = strlen(space);
  for (int64_t id = 0; id < tok->vocab_size; id++) {
    const char *s = tok->token[id];
    size_t len = tok->token_len[id];
    for (size_t k = 1; s && k + sl <= len; k++)
      if (!memcmp(s + k, space, sl) && (k < sl || memcmp(s + k - sl, space, sl))) return 0;
  }
  return 1;
}

int nd__cut_at_spaces(const nd_tokenizer *tok) {
  const char *space = " ";
  for (int i = 0; i < tok->n_norms; i++) {
    const nd__norm *n = &tok->norms[i];
    /* Prepend is left out at a cut; a one-character literal Replace reads one character */
    if (n->kind == ND_NORM_REPLACE && (n->pattern.re || n->pattern.literal_len != 1)) return 0;
    if (n->kind == ND_NORM_REPLACE && n->pattern.literal[0] == ' ') space = n->content;
  }
  for (int i = 0; i < tok->n_added; i++)
    if (memchr(tok->added[i].content, ' ', tok->added[i].len)) return 0;
  if (tok->n_pretoks == 0) return !tok->ignore_merges && *space && no_token_across(tok, space);
  const nd__pretok *p = &tok->pretoks[0];
  switch (p->kind) {
  case ND_PRE_BYTELEVEL: return p->use_regex;
  case ND_PRE_SPLIT: return p->behavior == ND_SPLIT_ISOLATED && !p->invert && regex_cuts(&p->pattern);
  case ND_PRE_METASPACE: return p->split && !strcmp(space, " ");
  }
  return 0;
}

/* Where the chunk buf[0, n) may end: the last space between two printable
 * ASCII characters, 0 when there is none. */
static size_t last_cut(const char *buf, size_t n) {
  for (size_t x = n - 1; x-- > 1;)
    if (buf[x] == ' ' && buf[x - 1] > ' ' && buf[x - 1] < 0x7F && buf[x + 1] > ' ' && buf[x + 1] < 0x7F) return x;
  return 0;
}

typedef struct job {
  nd_tokenizer *tok;
  nd__atomic_file out;
  int width;
  uint32_t *ids;
  size_t n, cap;
  unsigned char *bytes;
  size_t bytes_cap;
  int64_t tokens, done_bytes, total_bytes;
  int progress;
  double started, shown;
} job;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void show(job *j, const char *name, int last) {
  double t = now();
  if (!j->progress || (!last && t - j->shown < 0.25)) return;
  j->shown = t;
  fprintf(stderr, "\rtokenize: %s  %.1f / %.1f MB, %lld tokens, %.2f M tokens/s   %s", name, j->done_bytes / 1e6,
          j->total_bytes / 1e6, (long long)j->tokens, j->tokens / 1e6 / (t - j->started + 1e-9), last ? "\n" : "");
  fflush(stderr);
}

/* Writes the ids gathered in j->ids, little-endian, and forgets them. */
static int flush_ids(job *j, nd_error *err) {
  size_t need = j->n * (size_t)j->width;
  if (need > j->bytes_cap) {
    unsigned char *b = realloc(j->bytes, need);
    if (!b) return nd__fail(err, ND_ENOMEM, "%s: out of memory", j->out.path);
    j->bytes = b, j->bytes_cap = need;
  }
  for (size_t i = 0; i < j->n; i++)
    for (int k = 0; k < j->width; k++) j->bytes[i * (size_t)j->width + (size_t)k] = (unsigned char)(j->ids[i] >> 8 * k);
  j->tokens += (int64_t)j->n;
  j->n = 0;
  return nd__atomic_write(&j->out, j->bytes, need, err);
}

int nd__encode_stream(nd_tokenizer *tok, const nd__stream *in, size_t chunk, uint32_t **ids, size_t *n, size_t *cap,
                      nd_error *err) {
  char *buf = NULL;
  size_t have = 0, room = 0, want = chunk;
  int rc = 0, continuation = 0;
  for (int eof = 0; !eof;) {
    while (!eof && have < want) { /* a chunk's worth, or the rest */
      if (have + chunk > room) {
        char *b = realloc(buf, room = 2 * (have + chunk));
        if (!b) {
          rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", in->name);
          goto done;
        }
        buf = b;
      }
      ssize_t got = in->read(in->ctx, buf + have, chunk);
      if (got < 0) {
        rc = nd__fail(err, ND_EINVAL, "%s: cannot read: %s", in->name, strerror(errno));
        goto done;
      }
      eof = got == 0, have += (size_t)got;
    }
    size_t cut = eof ? have : tok->cut_at_spaces ? last_cut(buf, have) : 0;
    if (cut == 0 && !eof) { /* no place to cut yet: read on */
      want = have + chunk;
      continue;
    }
    want = chunk;
    if ((rc = nd__encode(tok, buf, cut, continuation, ids, n, cap, err)) || (in->chunk_done && (rc = in->chunk_done(in->ctx, err))))
      goto done;
    continuation = 1;
    memmove(buf, buf + cut, have - cut);
    have -= cut;
  }
done:
  free(buf);
  return rc;
}

typedef struct file_in {
  job *j;
  int fd;
  const char *path;
} file_in;

static ssize_t file_read(void *ctx, char *buf, size_t len) {
  file_in *f = ctx;
  ssize_t got;
  while ((got = read(f->fd, buf, len)) < 0 && errno == EINTR) continue;
  if (got > 0) f->j->done_bytes += got;
  return got;
}

/* After each chunk: its ids to the file, the progress line. */
static int file_chunk_done(void *ctx, nd_error *err) {
  file_in *f = ctx;
  int rc = flush_ids(f->j, err);
  show(f->j, f->path, 0);
  return rc;
}

static int document(job *j, const char *path, uint32_t eot, nd_error *err) {
  file_in f = {j, open(path, O_RDONLY), path};
  if (f.fd < 0) return nd__fail(err, ND_EINVAL, "%s: cannot open: %s", path, strerror(errno));
  nd__stream in = {file_read, file_chunk_done, &f, path};
  int rc = nd__put_ids(&j->ids, &j->n, &j->cap, &eot, 1) ? nd__fail(err, ND_ENOMEM, "%s: out of memory", path)
                                                         : nd__encode_stream(j->tok, &in, CHUNK, &j->ids, &j->n, &j->cap, err);
  close(f.fd);
  return rc;
}

int nd_tokenize_files(nd_tokenizer *tok, const char *const *inputs, int n_inputs, const char *out, int64_t eot,
                      int progress, int64_t *tokens, nd_error *err) {
  *tokens = 0;
  if (eot < 0 && (eot = tok->eot) < 0)
    return nd__fail(err, ND_EINVAL,
                    "%s: no end-of-text token (a special <|endoftext|>, <|end_of_text|>, </s> or <eos>); give one with --eot ID",
                    tok->path);
  if (eot >= tok->vocab_size)
    return nd__fail(err, ND_EINVAL, "%s: end-of-text id %lld is past the vocabulary (%lld ids)", tok->path,
                    (long long)eot, (long long)tok->vocab_size);
  job j = {.tok = tok, .width = tok->vocab_size <= 65536 ? 2 : 4, .progress = progress, .started = now()};
  for (int i = 0; i < n_inputs; i++) { /* every input readable before anything is written */
    struct stat st;
    if (stat(inputs[i], &st)) return nd__fail(err, ND_EINVAL, "%s: cannot open: %s", inputs[i], strerror(errno));
    if (S_ISDIR(st.st_mode)) return nd__fail(err, ND_EINVAL, "%s: is a directory, not a text file", inputs[i]);
    j.total_bytes += st.st_size;
  }
  int rc = nd__atomic_open(&j.out, out, err);
  for (int i = 0; !rc && i < n_inputs; i++) rc = document(&j, inputs[i], (uint32_t)eot, err);
  if (rc && j.progress && j.shown > 0) fputc('\n', stderr); /* the error on a line of its own */
  if (rc) nd__atomic_abort(&j.out);
  else {
    show(&j, out, 1);
    rc = nd__atomic_commit(&j.out, err);
  }
  free(j.ids), free(j.bytes);
  *tokens = rc ? 0 : j.tokens;
  return rc;
}
