/* Decoding, as `tokenizers` does: the ids' strings (special tokens left
 * out), each decoder of the chain turning the list of strings into another,
 * then the strings joined (with a space where there is no decoder). */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

static const char *str_at(const nd__pieces *l, size_t i) { return l->buf + l->p[i].start; }

/* Adds s even when empty: a decoder's empty string still counts as a token
 * (Metaspace and Strip look at the first one). */
static int add(nd__pieces *l, const char *s, size_t len) {
  static const struct nd__piece none = {.id = -1};
  if (len) return nd__pieces_add(l, s, len, none);
  /* nd__pieces_add drops an empty piece: add one byte, then take it back */
  if (nd__pieces_add(l, " ", 1, none)) return -1;
  l->p[l->n - 1].len = 0, l->used--;
  return 0;
}

/* The code point at s, and its length in *n (valid UTF-8). */
static uint32_t code_point(const unsigned char *s, size_t *n) {
  *n = nd__utf8_char_len(s[0]);
  if (*n == 1) return s[0];
  uint32_t cp = s[0] & (0x7F >> *n);
  for (size_t i = 1; i < *n; i++) cp = cp << 6 | (s[i] & 0x3F);
  return cp;
}

/* GPT-2's byte for a byte-level character, -1 for another character. */
static int16_t byte_of_table[256 + 68];
static void byte_of_fill(void) {
  for (int c = 0; c < 256 + 68; c++) byte_of_table[c] = -1;
  for (int c = 0; c < 256; c++) byte_of_table[nd__byte_level_char((unsigned char)c)] = (int16_t)c;
}
static int byte_of(uint32_t cp) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, byte_of_fill);
  return cp < 256 + 68 ? byte_of_table[cp] : -1;
}

static int byte_level(const nd__pieces *in, nd__pieces *out, char **tmp, size_t *cap) {
  size_t n = 0;
  for (size_t i = 0; i < in->n; i++) {
    const unsigned char *s = (const unsigned char *)str_at(in, i);
    size_t len = in->p[i].len, mark = n, cl;
    if (nd__grow(tmp, n, len, cap)) return -1;
    int all = 1;
    for (size_t k = 0; k < len && all; k += cl) {
      int b = byte_of(code_point(s + k, &cl));
      if (b < 0) all = 0;
      else (*tmp)[n++] = (char)b;
    }
    if (!all) { /* a token that is not byte-level text stands for itself */
      n = mark;
      memcpy(*tmp + n, s, len), n += len;
    }
  }
  char *clean = NULL;
  size_t clean_len = 0, clean_cap = 0;
  int rc = nd__utf8_clean(*tmp, n, &clean, &clean_len, &clean_cap) || add(out, clean, clean_len);
  free(clean);
  return rc;
}

static int byte_fallback(const nd__pieces *in, nd__pieces *out, char **tmp, size_t *cap) {
  size_t n = 0;
  for (size_t i = 0; i <= in->n; i++) {
    const char *s = i < in->n ? str_at(in, i) : "";
    size_t len = i < in->n ? in->p[i].len : 0;
    if (len == 6 && !strncmp(s, "<0x", 3) && s[5] == '>' && isxdigit((unsigned char)s[3]) &&
        isxdigit((unsigned char)s[4])) {
      char hex[3] = {s[3], s[4], 0};
      if (nd__grow(tmp, n, 1, cap)) return -1;
      (*tmp)[n++] = (char)strtol(hex, NULL, 16);
      continue;
    }
    if (n) { /* the bytes so far: their text when valid UTF-8, else one U+FFFD each */
      int valid = 1;
      for (size_t k = 0, v; k < n && valid; k += v) valid = (v = nd__utf8_valid_len((unsigned char *)*tmp + k, n - k)) > 0;
      if (valid ? add(out, *tmp, n) : 0) return -1;
      for (size_t k = 0; !valid && k < n; k++)
        if (add(out, "\xEF\xBF\xBD", 3)) return -1;
      n = 0;
    }
    if (i < in->n && add(out, s, len)) return -1;
  }
  return 0;
}

/* Replaces every from in each string by to; Metaspace's decoder is this
 * plus dropping the first string's leading space. */
static int replace(const nd__dec *d, const nd__pieces *in, nd__pieces *out, char **tmp, size_t *cap) {
  size_t fl = strlen(d->from), tl = strlen(d->to);
  for (size_t i = 0; i < in->n; i++) {
    const char *s = str_at(in, i), *end = s + in->p[i].len, *at;
    size_t n = 0;
    while ((at = memmem(s, (size_t)(end - s), d->from, fl))) {
      if (nd__grow(tmp, n, (size_t)(at - s) + tl, cap)) return -1;
      memcpy(*tmp + n, s, (size_t)(at - s)), n += (size_t)(at - s);
      memcpy(*tmp + n, d->to, tl), n += tl;
      s = at + fl;
    }
    if (nd__grow(tmp, n, (size_t)(end - s), cap)) return -1;
    memcpy(*tmp + n, s, (size_t)(end - s)), n += (size_t)(end - s);
    size_t skip = d->kind == ND_DEC_METASPACE && i == 0 && d->prepend != ND_PREPEND_NEVER && n > 0 && (*tmp)[0] == ' ';
    if (add(out, *tmp + skip, n - skip)) return -1;
  }
  return 0;
}

/* Up to start leading and stop trailing copies of a character, off each string. */
static int strip(const nd__dec *d, const nd__pieces *in, nd__pieces *out) {
  size_t cl = strlen(d->content);
  for (size_t i = 0; i < in->n; i++) {
    const char *s = str_at(in, i);
    size_t len = in->p[i].len;
    for (int k = 0; k < d->start && len >= cl && !memcmp(s, d->content, cl); k++) s += cl, len -= cl;
    for (int k = 0; k < d->stop && len >= cl && !memcmp(s + len - cl, d->content, cl); k++) len -= cl;
    if (add(out, s, len)) return -1;
  }
  return 0;
}

static int fuse(const nd__pieces *in, nd__pieces *out) {
  if (add(out, "", 0)) return -1;
  for (size_t i = 0; i < in->n; i++) {
    if (nd__grow(&out->buf, out->used, in->p[i].len, &out->cap)) return -1;
    memcpy(out->buf + out->used, str_at(in, i), in->p[i].len);
    out->used += in->p[i].len, out->p[0].len += in->p[i].len;
  }
  return 0;
}

int nd_tokenizer_decode(const nd_tokenizer *tok, const uint32_t *ids, size_t n, char **text, size_t *len,
                        nd_error *err) {
  nd__pieces l[2] = {{0}, {0}};
  char *tmp = NULL;
  size_t cap = 0;
  int rc = 0, cur = 0;
  *text = NULL, *len = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] >= tok->vocab_size || !tok->token[ids[i]]) {
      rc = nd__fail(err, ND_EINVAL, "%s: id %u is not in the vocabulary (%lld ids)", tok->path, ids[i],
                    (long long)tok->vocab_size);
      goto done;
    }
    if (!tok->special[ids[i]] && add(&l[0], tok->token[ids[i]], tok->token_len[ids[i]])) goto oom;
  }
  for (int k = 0; k < tok->n_decs; k++) {
    const nd__dec *d = &tok->decs[k];
    nd__pieces *in = &l[cur], *out = &l[!cur];
    out->n = out->used = 0;
    int bad = 0;
    switch (d->kind) {
    case ND_DEC_BYTELEVEL: bad = byte_level(in, out, &tmp, &cap); break;
    case ND_DEC_BYTEFALLBACK: bad = byte_fallback(in, out, &tmp, &cap); break;
    case ND_DEC_FUSE: bad = fuse(in, out); break;
    case ND_DEC_REPLACE:
    case ND_DEC_METASPACE: bad = replace(d, in, out, &tmp, &cap); break;
    case ND_DEC_STRIP: bad = strip(d, in, out); break;
    }
    if (bad) goto oom;
    cur = !cur;
  }
  size_t total = 0;
  for (size_t i = 0; i < l[cur].n; i++) total += l[cur].p[i].len + (tok->n_decs ? 0 : 1);
  if (!(*text = malloc(total + 1))) goto oom;
  for (size_t i = 0; i < l[cur].n; i++) {
    if (!tok->n_decs && i > 0) (*text)[(*len)++] = ' ';
    memcpy(*text + *len, str_at(&l[cur], i), l[cur].p[i].len), *len += l[cur].p[i].len;
  }
  (*text)[*len] = 0;
  goto done;
oom:
  rc = nd__fail(err, ND_ENOMEM, "%s: out of memory while decoding", tok->path);
done:
  nd__pieces_free(&l[0]), nd__pieces_free(&l[1]), free(tmp);
  return rc;
}
