/* The BPE model on one pre-tokenized word, as `tokenizers` runs it: the
 * word's characters (or their bytes' <0xXX> tokens, or the unknown token),
 * then the merge of lowest rank, leftmost first, until none applies; a
 * min-heap of candidate merges over a linked list of symbols, so a word of n
 * characters takes O(n log n). Words seen before come from a cache. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"
#include "text/utf8.h"

/* The cache holds at most this many bytes of words before it is emptied. */
#define CACHE_BYTES (8u << 20)
/* Longer words are not cached (`tokenizers` does the same past 256). */
#define CACHE_WORD_MAX 256

typedef struct sym {
  uint32_t id;
  int prev, next; /* -1: none */
  int len;        /* 0: merged into its left neighbour */
} sym;

typedef struct cand {
  uint32_t rank, pos, id; /* the merge of symbol pos with its right neighbour into id */
} cand;

struct nd__bpe_work {
  sym *syms;
  cand *heap;
  size_t n_syms, syms_cap, n_heap, heap_cap;
};
typedef struct nd__bpe_work work;

static int before(cand a, cand b) { return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos; }

static int heap_push(work *w, cand c) {
  if (w->n_heap == w->heap_cap) {
    size_t cap = w->heap_cap ? 2 * w->heap_cap : 64;
    cand *h = realloc(w->heap, cap * sizeof *h);
    if (!h) return -1;
    w->heap = h, w->heap_cap = cap;
  }
  size_t i = w->n_heap++;
  while (i > 0 && before(c, w->heap[(i - 1) / 2])) w->heap[i] = w->heap[(i - 1) / 2], i = (i - 1) / 2;
  w->heap[i] = c;
  return 0;
}

static cand heap_pop(work *w) {
  cand top = w->heap[0], last = w->heap[--w->n_heap];
  size_t i = 0, n = w->n_heap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(w->heap[c + 1], w->heap[c])) c++;
    if (!before(w->heap[c], last)) break;
    w->heap[i] = w->heap[c], i = c;
  }
  if (n) w->heap[i] = last;
  return top;
}

static int add_sym(work *w, uint32_t id, int len) {
  if (w->n_syms == w->syms_cap) {
    size_t cap = w->syms_cap ? 2 * w->syms_cap : 64;
    sym *s = realloc(w->syms, cap * sizeof *s);
    if (!s) return -1;
    w->syms = s, w->syms_cap = cap;
  }
  int i = (int)w->n_syms++;
  w->syms[i] = (sym){id, i - 1, -1, len};
  if (i > 0) w->syms[i - 1].next = i;
  return 0;
}

/* The candidate merge of symbol i with its right neighbour, if any. */
static int offer(const nd_tokenizer *tok, work *w, int i) {
  int j = w->syms[i].next;
  uint64_t m;
  if (j < 0 || !nd__pairmap_get(&tok->merges, w->syms[i].id, w->syms[j].id, &m)) return 0;
  return heap_push(w, (cand){(uint32_t)(m >> 32), (uint32_t)i, (uint32_t)m});
}

/* The word's first symbols, as `tokenizers`' merge_word makes them: a
 * character in the vocabulary is its token; else, with byte_fallback, its
 * bytes' tokens when all exist; else the unknown token (consecutive ones
 * fused into one with fuse_unk; dropped when there is none). */
static int first_symbols(const nd_tokenizer *tok, work *w, const char *s, size_t len) {
  int64_t unk = -1;
  int unk_len = 0;
  for (size_t i = 0; i < len;) {
    size_t cl = nd__utf8_char_len((unsigned char)s[i]);
    if (cl > len - i) cl = len - i;
    int64_t id = nd__strmap_get(&tok->vocab, s + i, cl);
    if (id >= 0) {
      if (unk >= 0 && add_sym(w, (uint32_t)unk, unk_len)) return -1;
      unk = -1;
      if (add_sym(w, (uint32_t)id, (int)cl)) return -1;
    } else {
      int all = tok->byte_fallback;
      for (size_t k = 0; all && k < cl; k++) all = tok->byte_id[(unsigned char)s[i + k]] >= 0;
      if (all) { /* the pending unknown token stays pending, as there */
        for (size_t k = 0; k < cl; k++)
          if (add_sym(w, (uint32_t)tok->byte_id[(unsigned char)s[i + k]], 1)) return -1;
      } else if (tok->unk >= 0) {
        if (unk >= 0 && tok->fuse_unk) unk_len += (int)cl;
        else {
          if (unk >= 0 && add_sym(w, (uint32_t)unk, unk_len)) return -1;
          unk = tok->unk, unk_len = (int)cl;
        }
      }
    }
    i += cl;
  }
  return unk >= 0 ? add_sym(w, (uint32_t)unk, unk_len) : 0;
}

static int merge_all(const nd_tokenizer *tok, work *w) {
  for (size_t i = 0; i < w->n_syms; i++)
    if (offer(tok, w, (int)i)) return -1;
  while (w->n_heap) {
    cand c = heap_pop(w);
    sym *a = &w->syms[c.pos];
    if (a->len == 0 || a->next < 0) continue; /* merged away since */
    sym *b = &w->syms[a->next];
    uint64_t m;
    /* the pair changed since this candidate was made */
    if (!nd__pairmap_get(&tok->merges, a->id, b->id, &m) || (uint32_t)m != c.id) continue;
    a->id = c.id, a->len += b->len, b->len = 0;
    a->next = b->next;
    if (b->next >= 0) w->syms[b->next].prev = (int)c.pos;
    if ((a->prev >= 0 && offer(tok, w, a->prev)) || offer(tok, w, (int)c.pos)) return -1;
  }
  return 0;
}

int nd__put_ids(uint32_t **ids, size_t *n, size_t *cap, const uint32_t *src, size_t count) {
  if (*n + count > *cap) {
    size_t c = *cap ? *cap : 1024;
    while (c < *n + count) c *= 2;
    uint32_t *p = realloc(*ids, c * sizeof *p);
    if (!p) return -1;
    *ids = p, *cap = c;
  }
  memcpy(*ids + *n, src, count * sizeof *src);
  *n += count;
  return 0;
}

static void cache_clear(nd__cache *c) {
  /* the map's keys point into words: empty both */
  nd__strmap_free(&c->map);
  c->words_used = c->ids_used = 0;
}

void nd__bpe_free(nd_tokenizer *tok) {
  nd__cache *c = &tok->cache;
  nd__strmap_free(&c->map);
  free(c->words), free(c->ids);
  *c = (nd__cache){0};
  if (tok->work) free(tok->work->syms), free(tok->work->heap);
  free(tok->work);
  tok->work = NULL;
}

/* Remembers word -> ids[0, count); a full cache is emptied first (its words
 * buffer is never moved while the map points into it). */
static void cache_put(nd__cache *c, const char *word, size_t len, const uint32_t *ids, size_t count) {
  if (!c->words && !(c->words = malloc(CACHE_BYTES))) return;
  if (c->words_used + len > CACHE_BYTES || c->ids_used + count + 1 > CACHE_BYTES / 4) cache_clear(c);
  if (!c->ids && !(c->ids = malloc(CACHE_BYTES))) return;
  char *key = c->words + c->words_used;
  memcpy(key, word, len);
  if (nd__strmap_put(&c->map, key, len, (uint32_t)c->ids_used)) return;
  c->words_used += len;
  c->ids[c->ids_used++] = (uint32_t)count;
  memcpy(c->ids + c->ids_used, ids, count * sizeof *ids);
  c->ids_used += count;
}

int nd__bpe_word(nd_tokenizer *tok, const char *word, size_t len, uint32_t **ids, size_t *n, size_t *cap) {
  if (len == 0) return 0;
  int64_t id;
  if (tok->ignore_merges && (id = nd__strmap_get(&tok->vocab, word, len)) >= 0) { /* Llama 3: a word in the vocabulary is its token */
    uint32_t one = (uint32_t)id;
    return nd__put_ids(ids, n, cap, &one, 1);
  }
  int64_t at = len <= CACHE_WORD_MAX ? nd__strmap_get(&tok->cache.map, word, len) : -1;
  if (at >= 0) return nd__put_ids(ids, n, cap, tok->cache.ids + at + 1, tok->cache.ids[at]);
  if (!tok->work && !(tok->work = calloc(1, sizeof *tok->work))) return -1;
  work *w = tok->work; /* reused across words: no allocation per word */
  w->n_syms = w->n_heap = 0;
  if (first_symbols(tok, w, word, len) || merge_all(tok, w)) return -1;
  size_t start = *n;
  for (int i = w->n_syms ? 0 : -1; i >= 0; i = w->syms[i].next)
    if (nd__put_ids(ids, n, cap, &w->syms[i].id, 1)) return -1;
  if (len <= CACHE_WORD_MAX) cache_put(&tok->cache, word, len, *ids + start, *n - start);
  return 0;
}
