/* Encoding, stage by stage as `tokenizers` does it: the added tokens that
 * are not normalized are cut out of the text, the rest is normalized, the
 * normalized added tokens are cut out, the pre-tokenizers cut the rest into
 * words, and BPE turns each word into ids. Each stage turns a list of pieces
 * into another; a piece that is an added token passes through. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

int nd__pieces_add(nd__pieces *l, const char *s, size_t len, struct nd__piece like) {
  if (len == 0) return 0; /* empty pieces are dropped, as there */
  if (nd__grow(&l->buf, l->used, len, &l->cap)) return -1;
  if (l->n == l->n_cap) {
    size_t cap = l->n_cap ? 2 * l->n_cap : 256;
    struct nd__piece *p = realloc(l->p, cap * sizeof *p);
    if (!p) return -1;
    l->p = p, l->n_cap = cap;
  }
  memcpy(l->buf + l->used, s, len);
  like.start = l->used, like.len = len;
  l->p[l->n++] = like;
  l->used += len;
  return 0;
}

void nd__pieces_free(nd__pieces *l) {
  free(l->buf), free(l->p);
  *l = (nd__pieces){0};
}

static void pieces_clear(nd__pieces *l) { l->used = l->n = 0; }

int nd__pattern_find(nd_tokenizer *tok, const nd__pattern *p, const char *s, size_t len,
                     int (*fn)(void *ctx, size_t start, size_t end), void *ctx) {
  int rc;
  if (!p->re) {
    for (const char *at = s, *end = s + len; (at = memmem(at, (size_t)(end - at), p->literal, p->literal_len));
         at += p->literal_len)
      if ((rc = fn(ctx, (size_t)(at - s), (size_t)(at - s) + p->literal_len))) return rc;
    return 0;
  }
  for (size_t at = 0; at <= len;) {
    /* the text was made valid UTF-8 on the way in */
    int m = pcre2_match(p->re, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, tok->match, NULL);
    if (m == PCRE2_ERROR_NOMATCH) return 0;
    if (m < 0) return tok->regex_error = m, -1; /* a match limit, memory */
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(tok->match);
    if (ov[1] > ov[0]) {
      if ((rc = fn(ctx, ov[0], ov[1]))) return rc;
      at = ov[1];
    } else /* an empty match cuts nothing: go on after the next character */
      at = ov[0] < len ? ov[0] + nd__utf8_char_len((unsigned char)s[ov[0]]) : len + 1;
  }
  return 0;
}

/* The spans of a piece: its matches and the gaps between them, in order. */
static int add_span(nd_tokenizer *tok, size_t start, size_t end, int match) {
  if (tok->n_spans == tok->spans_cap) {
    size_t cap = tok->spans_cap ? 2 * tok->spans_cap : 256;
    struct nd__span *s = realloc(tok->spans, cap * sizeof *s);
    if (!s) return -1;
    tok->spans = s, tok->spans_cap = cap;
  }
  tok->spans[tok->n_spans++] = (struct nd__span){start, end, match};
  return 0;
}

typedef struct span_ctx {
  nd_tokenizer *tok;
  size_t prev;
} span_ctx;

static int on_match(void *ctx, size_t start, size_t end) {
  span_ctx *c = ctx;
  if (c->prev < start && add_span(c->tok, c->prev, start, 0)) return -1;
  c->prev = end;
  return add_span(c->tok, start, end, 1);
}

/* Cuts piece (s, len) by pattern with a Split behaviour into out; the first
 * piece keeps like's flags, the others start nowhere special. */
static int split(nd_tokenizer *tok, const nd__pattern *p, enum nd__split behavior, int invert, const char *s,
                 size_t len, struct nd__piece like, nd__pieces *out) {
  tok->n_spans = 0;
  span_ctx c = {tok, 0};
  if (nd__pattern_find(tok, p, s, len, on_match, &c) || (c.prev < len && add_span(tok, c.prev, len, 0))) return -1;
  struct nd__span *sp = tok->spans;
  size_t n = tok->n_spans, k = 0;
  if (invert)
    for (size_t i = 0; i < n; i++) sp[i].match = !sp[i].match;
  /* the behaviours of `tokenizers`' NormalizedString::split, into sp[0, k) */
  int prev = 0;
  switch (behavior) {
  case ND_SPLIT_REMOVED:
    for (size_t i = 0; i < n; i++)
      if (!sp[i].match) sp[k++] = sp[i];
    break;
  case ND_SPLIT_ISOLATED:
    k = n;
    break;
  case ND_SPLIT_PREVIOUS: /* a match joins the piece before it */
    for (size_t i = 0; i < n; i++) {
      if (sp[i].match && !prev && k > 0) sp[k - 1].end = sp[i].end;
      else sp[k++] = sp[i];
      prev = sp[i].match;
    }
    break;
  case ND_SPLIT_NEXT: /* a match joins the piece after it: the same, from the end */
    k = n;
    for (size_t i = n; i-- > 0;) {
      if (sp[i].match && !prev && k < n) sp[k].start = sp[i].start;
      else sp[--k] = sp[i];
      prev = sp[i].match;
    }
    memmove(sp, sp + k, (n - k) * sizeof *sp);
    k = n - k;
    break;
  case ND_SPLIT_CONTIGUOUS: /* runs of matches become one piece */
    for (size_t i = 0; i < n; i++) {
      if (sp[i].match == prev && k > 0) sp[k - 1].end = sp[i].end;
      else sp[k++] = sp[i];
      prev = sp[i].match;
    }
    break;
  }
  for (size_t i = 0; i < k; i++) {
    struct nd__piece q = like;
    if (sp[i].start > 0) q.at_start = q.no_prepend = 0;
    if (nd__pieces_add(out, s + sp[i].start, sp[i].end - sp[i].start, q)) return -1;
  }
  return 0;
}

/* Cuts the added tokens (those normalized or not, as `normalized` says) out
 * of in's text pieces, leftmost first and the longest there. */
static int split_added(nd_tokenizer *tok, const nd__pieces *in, nd__pieces *out, int normalized) {
  pieces_clear(out);
  for (size_t k = 0; k < in->n; k++) {
    struct nd__piece pc = in->p[k];
    const char *s = in->buf + pc.start;
    if (pc.id >= 0) {
      if (nd__pieces_add(out, s, pc.len, pc)) return -1;
      continue;
    }
    size_t from = 0;
    for (size_t i = 0; i < pc.len; i++) {
      if (!tok->added_first[(unsigned char)s[i]]) continue;
      const nd__added *best = NULL;
      for (int a = 0; a < tok->n_added; a++) {
        const nd__added *t = &tok->added[a];
        if (t->normalized == normalized && t->len <= pc.len - i && (!best || t->len > best->len) &&
            memcmp(s + i, t->content, t->len) == 0)
          best = t;
      }
      if (!best) continue;
      struct nd__piece text = pc, token = {.id = best->id};
      if (from > 0) text.at_start = text.no_prepend = 0;
      if (nd__pieces_add(out, s + from, i - from, text) || nd__pieces_add(out, best->content, best->len, token))
        return -1;
      from = i + best->len;
      i = from - 1;
    }
    struct nd__piece rest = pc;
    if (from > 0) rest.at_start = rest.no_prepend = 0;
    if (nd__pieces_add(out, s + from, pc.len - from, rest)) return -1;
  }
  return 0;
}

typedef struct replace_ctx {
  nd_tokenizer *tok;
  const char *s, *content;
  size_t prev, content_len;
  int dst;
  size_t len;
} replace_ctx;

static int put(nd_tokenizer *tok, int dst, size_t *len, const char *s, size_t n) {
  if (nd__grow(&tok->norm[dst], *len, n, &tok->norm_cap[dst])) return -1;
  memcpy(tok->norm[dst] + *len, s, n);
  *len += n;
  return 0;
}

static int on_replace(void *ctx, size_t start, size_t end) {
  replace_ctx *c = ctx;
  if (put(c->tok, c->dst, &c->len, c->s + c->prev, start - c->prev) ||
      put(c->tok, c->dst, &c->len, c->content, c->content_len))
    return -1;
  c->prev = end;
  return 0;
}

/* The normalizers on each text piece of in, into out. */
static int normalize(nd_tokenizer *tok, const nd__pieces *in, nd__pieces *out) {
  pieces_clear(out);
  for (size_t k = 0; k < in->n; k++) {
    struct nd__piece pc = in->p[k];
    const char *s = in->buf + pc.start;
    size_t len = pc.len;
    for (int i = 0; pc.id < 0 && i < tok->n_norms; i++) {
      const nd__norm *nm = &tok->norms[i];
      int dst = s == tok->norm[0] ? 1 : 0;
      size_t n = 0;
      if (nm->kind == ND_NORM_PREPEND) {
        if (len == 0 || pc.no_prepend) continue;
        if (put(tok, dst, &n, nm->content, strlen(nm->content)) || put(tok, dst, &n, s, len)) return -1;
      } else {
        replace_ctx c = {tok, s, nm->content, 0, strlen(nm->content), dst, 0};
        if (nd__pattern_find(tok, &nm->pattern, s, len, on_replace, &c) ||
            put(tok, dst, &c.len, s + c.prev, len - c.prev))
          return -1;
        n = c.len;
      }
      s = tok->norm[dst], len = n;
    }
    if (nd__pieces_add(out, s, len, pc)) return -1;
  }
  return 0;
}

/* Byte-level: each byte as its character (nd__byte_level_char), in UTF-8. */
static char byte_table[256][3];
static size_t byte_lens[256];
static void byte_table_fill(void) {
  for (int c = 0; c < 256; c++) byte_lens[c] = nd__utf8_put(nd__byte_level_char((unsigned char)c), byte_table[c]);
}
static const char *byte_char(unsigned char b, size_t *len) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, byte_table_fill);
  *len = byte_lens[b];
  return byte_table[b];
}

static int byte_map(nd_tokenizer *tok, const char *s, size_t len, struct nd__piece like, nd__pieces *out) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    size_t cl;
    const char *c = byte_char((unsigned char)s[i], &cl);
    if (put(tok, 0, &n, c, cl)) return -1;
  }
  return nd__pieces_add(out, tok->norm[0], n, like);
}

/* One pre-tokenizer on each text piece of in, into out. */
static int pre_tokenize(nd_tokenizer *tok, const nd__pretok *pt, const nd__pieces *in, nd__pieces *out) {
  pieces_clear(out);
  nd__pieces *tmp = &tok->scratch[2];
  for (size_t k = 0; k < in->n; k++) {
    struct nd__piece pc = in->p[k];
    const char *s = in->buf + pc.start;
    size_t len = pc.len, n = 0;
    if (pc.id >= 0) {
      if (nd__pieces_add(out, s, len, pc)) return -1;
      continue;
    }
    switch (pt->kind) {
    case ND_PRE_SPLIT:
      if (split(tok, &pt->pattern, pt->behavior, pt->invert, s, len, pc, out)) return -1;
      break;
    case ND_PRE_BYTELEVEL:
      if (pt->add_prefix_space && s[0] != ' ') {
        if (put(tok, 1, &n, " ", 1) || put(tok, 1, &n, s, len)) return -1;
        s = tok->norm[1], len = n;
      }
      pieces_clear(tmp);
      if (pt->use_regex ? split(tok, &pt->pattern, ND_SPLIT_ISOLATED, 0, s, len, pc, tmp)
                        : nd__pieces_add(tmp, s, len, pc))
        return -1;
      for (size_t i = 0; i < tmp->n; i++)
        if (byte_map(tok, tmp->buf + tmp->p[i].start, tmp->p[i].len, tmp->p[i], out)) return -1;
      break;
    case ND_PRE_METASPACE: {
      size_t rl = strlen(pt->replacement);
      int prepend = pt->prepend == ND_PREPEND_ALWAYS || (pt->prepend == ND_PREPEND_FIRST && pc.at_start);
      for (size_t i = 0; i < len; i++) /* spaces become the replacement */
        if (put(tok, 1, &n, s[i] == ' ' ? pt->replacement : s + i, s[i] == ' ' ? rl : 1)) return -1;
      if (prepend && !(n >= rl && memcmp(tok->norm[1], pt->replacement, rl) == 0)) {
        if (put(tok, 1, &n, pt->replacement, rl)) return -1;
        memmove(tok->norm[1] + rl, tok->norm[1], n - rl);
        memcpy(tok->norm[1], pt->replacement, rl);
      }
      nd__pattern by = {.literal = (char *)pt->replacement, .literal_len = rl};
      if (pt->split ? split(tok, &by, ND_SPLIT_NEXT, 0, tok->norm[1], n, pc, out)
                    : nd__pieces_add(out, tok->norm[1], n, pc))
        return -1;
      break;
    }
    }
  }
  return 0;
}

int nd__encode(nd_tokenizer *tok, const char *text, size_t len, int continuation, uint32_t **ids, size_t *n,
               size_t *cap, nd_error *err) {
  size_t clean_len = 0;
  nd__pieces *a = &tok->scratch[0], *b = &tok->scratch[1];
  if (nd__utf8_clean(text, len, &tok->clean, &clean_len, &tok->clean_cap)) goto oom;
  pieces_clear(a);
  struct nd__piece doc = {.id = -1, .at_start = !continuation, .no_prepend = continuation};
  if (nd__pieces_add(a, tok->clean, clean_len, doc) || split_added(tok, a, b, 0) || normalize(tok, b, a) ||
      split_added(tok, a, b, 1))
    goto oom;
  for (int i = 0; i < tok->n_pretoks; i++) {
    if (pre_tokenize(tok, &tok->pretoks[i], b, a)) goto oom;
    nd__pieces *t = a;
    a = b, b = t;
  }
  for (size_t k = 0; k < b->n; k++) {
    const struct nd__piece *pc = &b->p[k];
    uint32_t id = (uint32_t)pc->id;
    if (pc->id >= 0 ? nd__put_ids(ids, n, cap, &id, 1) : nd__bpe_word(tok, b->buf + pc->start, pc->len, ids, n, cap))
      goto oom;
  }
  return 0;
oom:
  if (tok->regex_error) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(tok->regex_error, msg, sizeof msg);
    tok->regex_error = 0;
    return nd__fail(err, ND_ERUNTIME, "%s: a regex failed on the text: %s", tok->path, (char *)msg);
  }
  return nd__fail(err, ND_ENOMEM, "%s: out of memory while encoding", tok->path);
}

int nd_tokenizer_encode(nd_tokenizer *tok, const char *text, size_t len, uint32_t **ids, size_t *n, size_t *cap,
                        nd_error *err) {
  return nd__encode(tok, text, len, 0, ids, n, cap, err);
}
