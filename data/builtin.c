/* builtin:tales and builtin:tales-val: short children's stories from a small
 * grammar. The grammar is deliberately regular and repetitive (few words,
 * fixed templates, names that recur within a story) so that a small
 * byte-level model learns it within a few hundred steps; the two splits use
 * different seeds so validation text is not a copy of training text. */
#include "data/builtin.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* splitmix64: tiny, fast, and identical on every platform, unlike rand(). */
typedef struct {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n). The modulo bias is irrelevant for n this small. */
static size_t rng_below(rng *r, size_t n) { return (size_t)(rng_next(r) % n); }

#define COUNT(a)   (sizeof(a) / sizeof((a)[0]))
#define PICK(r, a) ((a)[rng_below((r), COUNT(a))])

static const char *const names[] = {"Tom", "Lily", "Ben", "Mia",  "Sam",  "Anna",
                                    "Max", "Sue",  "Tim", "Lucy", "Jack", "Emma"};
static const char *const animals[] = {"cat", "dog", "bird", "fish", "frog", "bear", "duck", "fox", "rabbit", "mouse"};
static const char *const adjectives[] = {"big",   "little", "red", "funny", "kind",
                                         "small", "shiny",  "old", "blue",  "soft"};
static const char *const feelings[] = {"happy", "sad", "scared", "tired", "hungry"};
static const char *const places[] = {"park", "garden", "forest", "house", "pond", "school", "beach", "yard"};
static const char *const things[] = {"ball", "kite", "box", "hat", "cake", "toy", "book", "flower", "apple", "rock"};
static const char *const games[] = {"play", "run", "jump", "sing", "read", "swim", "walk"};

typedef struct {
  uint8_t *buf;
  size_t len, cap;
  int failed; /* allocation failed: later appends are no-ops */
} sbuf;

static void put(sbuf *b, const char *s) {
  size_t n = strlen(s);
  if (b->failed) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    uint8_t *p = realloc(b->buf, cap);
    if (!p) {
      b->failed = 1;
      return;
    }
    b->buf = p;
    b->cap = cap;
  }
  memcpy(b->buf + b->len, s, n);
  b->len += n;
}

/* Appends the pieces, NULL-terminated: put_all(b, "a", "b", NULL). */
static void put_all(sbuf *b, const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  for (const char *s = first; s; s = va_arg(ap, const char *)) put(b, s);
  va_end(ap);
}

/* One story: a hero, a friend (an animal) and an object, kept for the whole
 * story so that later sentences can be predicted from earlier ones. */
static void story(sbuf *b, rng *r) {
  const char *hero = PICK(r, names);
  const char *pal = PICK(r, names);
  while (pal == hero) pal = PICK(r, names);
  const char *animal = PICK(r, animals);
  const char *adj = PICK(r, adjectives);
  const char *thing = PICK(r, things);
  const char *place = PICK(r, places);
  const char *game = PICK(r, games);
  const char *feel = PICK(r, feelings);
  /* "an old", not "a old": the only vowel-initial adjective. */
  const char *a_adj = adj[0] == 'o' ? "an " : "a ";

  switch (rng_below(r, 3)) {
  case 0:
    put_all(b, "Once upon a time, there was ", a_adj, adj, " ", animal, " named ", hero, ".", NULL);
    break;
  case 1:
    put_all(b, "One day, ", hero, " went to the ", place, ".", NULL);
    break;
  default:
    put_all(b, "There was a little ", animal, " named ", hero, ".", NULL);
    break;
  }
  size_t n = 3 + rng_below(r, 4);
  for (size_t i = 0; i < n; i++) {
    put(b, " ");
    switch (rng_below(r, 9)) {
    case 0:
      put_all(b, hero, " liked to ", game, " in the ", place, ".", NULL);
      break;
    case 1:
      put_all(b, "One day, ", hero, " saw ", a_adj, adj, " ", thing, ".", NULL);
      break;
    case 2:
      put_all(b, hero, " said, \"I want the ", thing, "!\"", NULL);
      break;
    case 3:
      put_all(b, "The ", animal, " was ", feel, ".", NULL);
      break;
    case 4:
      put_all(b, hero, " and ", pal, " played with the ", thing, ".", NULL);
      break;
    case 5:
      put_all(b, "They looked for the ", thing, " in the ", place, ".", NULL);
      break;
    case 6:
      put_all(b, hero, " gave the ", thing, " to ", pal, ".", NULL);
      break;
    case 7:
      put_all(b, pal, " said, \"Thank you, ", hero, "!\"", NULL);
      break;
    default:
      put_all(b, hero, " was ", feel, ", so ", hero, " went to the ", place, ".", NULL);
      break;
    }
  }
  if (rng_below(r, 2))
    put_all(b, " From that day on, ", hero, " and ", pal, " were best friends.\n", NULL);
  else
    put_all(b, " They were happy. The end.\n", NULL);
}

typedef struct {
  const char *name;
  uint64_t seed;
  size_t bytes; /* generate whole stories until at least this many */
} corpus;

static const corpus corpora[] = {
    {"tales", 0x7461646c65730001ull, 1000000},
    {"tales-val", 0x7461646c65730002ull, 100000},
};

const char *nd__builtin_names(void) { return "tales, tales-val"; }

int nd__builtin_generate(const char *name, uint8_t **bytes, size_t *len, nd_error *err) {
  const corpus *c = NULL;
  for (size_t i = 0; i < COUNT(corpora); i++)
    if (strcmp(name, corpora[i].name) == 0) c = &corpora[i];
  if (!c) return nd__fail(err, ND_EDATA, "builtin:%s: unknown built-in dataset (known: %s)", name, nd__builtin_names());

  rng r = {c->seed};
  sbuf b = {0};
  while (!b.failed && b.len < c->bytes) story(&b, &r);
  if (b.failed) {
    free(b.buf);
    return nd__fail(err, ND_ENOMEM, "builtin:%s: out of memory generating %zu bytes", name, c->bytes);
  }
  *bytes = b.buf;
  *len = b.len;
  return 0;
}
