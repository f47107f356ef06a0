/* What `make check` can afford of a libFuzzer run (scripts/fuzz.sh): the
 * committed seed corpus of a reader and a few thousand deterministic
 * mutations of it. A test defines its property check and calls these. */
#ifndef ND_TESTS_FUZZ_REPLAY_H
#define ND_TESTS_FUZZ_REPLAY_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

#define FUZZ_MAX_SEEDS 64
#define FUZZ_CAP       (1 << 16)

typedef struct fuzz_corpus {
  char *data[FUZZ_MAX_SEEDS];
  size_t len[FUZZ_MAX_SEEDS];
  size_t n;
  uint64_t rng;
} fuzz_corpus;

static inline uint64_t fuzz_rand(fuzz_corpus *c) {
  c->rng ^= c->rng << 13;
  c->rng ^= c->rng >> 7;
  c->rng ^= c->rng << 17;
  return c->rng;
}

static inline size_t fuzz_below(fuzz_corpus *c, size_t n) { return n ? (size_t)(fuzz_rand(c) % n) : 0; }

/* Every file of $ND_SRCDIR/tests/fuzz/NAME. */
static inline void fuzz_read_seeds(fuzz_corpus *c, const char *name) {
  const char *src = getenv("ND_SRCDIR");
  char dir[4096], path[8192];
  snprintf(dir, sizeof dir, "%s/tests/fuzz/%s", src ? src : ".", name);
  c->rng = 0x9e3779b97f4a7c15u;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) && c->n < FUZZ_MAX_SEEDS) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    char *buf = malloc(FUZZ_CAP);
    size_t n = f && buf ? fread(buf, 1, FUZZ_CAP, f) : 0;
    if (f) fclose(f);
    if (!n) {
      free(buf);
      continue;
    }
    c->data[c->n] = buf;
    c->len[c->n++] = n;
  }
  if (d) closedir(d);
}

static inline void fuzz_free(fuzz_corpus *c) {
  for (size_t i = 0; i < c->n; i++) free(c->data[i]);
}

/* 1 to 4 edits of buf[0..len) within cap bytes: a bit flip, an
 * interesting byte, a truncation, an inserted token, a deleted or a
 * duplicated span. Returns the new length. */
static inline size_t fuzz_mutate(fuzz_corpus *c, char *buf, size_t len, size_t cap, const char *const *tokens,
                                 size_t n_tokens) {
  static const unsigned char interesting[] = {0,   1,   0x7f, 0x80, 0xff, '"', '\\', '[', ']',
                                              '{', '}', ',',  ':',  '-',  '0', '9',  'e', '\n'};
  size_t rounds = 1 + fuzz_below(c, 4);
  for (size_t r = 0; r < rounds; r++) {
    switch (fuzz_below(c, 6)) {
    case 0:
      if (len) buf[fuzz_below(c, len)] ^= (char)(1u << fuzz_below(c, 8));
      break;
    case 1:
      if (len) buf[fuzz_below(c, len)] = (char)interesting[fuzz_below(c, sizeof interesting)];
      break;
    case 2:
      len = fuzz_below(c, len + 1);
      break;
    case 3: {
      const char *p = tokens[fuzz_below(c, n_tokens)];
      size_t pl = strlen(p), at = fuzz_below(c, len + 1);
      if (len + pl > cap) break;
      memmove(buf + at + pl, buf + at, len - at);
      memcpy(buf + at, p, pl);
      len += pl;
      break;
    }
    case 4: {
      if (!len) break;
      size_t at = fuzz_below(c, len), n = 1 + fuzz_below(c, len - at);
      memmove(buf + at, buf + at + n, len - at - n);
      len -= n;
      break;
    }
    default: {
      if (!len) break;
      size_t at = fuzz_below(c, len), n = 1 + fuzz_below(c, len - at < 64 ? len - at : 64);
      if (len + n > cap) break;
      memmove(buf + at + n, buf + at, len - at);
      len += n;
      break;
    }
    }
  }
  return len;
}

#endif
