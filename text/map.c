/* Open-addressing hash maps for the tokenizer: the vocabulary and the merges
 * are looked up for every character and pair of every word. */
#include "text/map.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h ^ h >> 29;
}

static uint64_t hash_u64(uint64_t x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ x >> 33;
}

static int strmap_grow(nd__strmap *m) {
  size_t cap = m->cap ? m->cap * 2 : 1024;
  struct nd__strmap_slot *s = calloc(cap, sizeof *s);
  if (!s) return -1;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    size_t j = hash_bytes(m->slots[i].key, m->slots[i].len) & (cap - 1);
    while (s[j].key) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s, m->cap = cap;
  return 0;
}

int nd__strmap_put(nd__strmap *m, const char *key, size_t len, uint32_t value) {
  if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return -1;
  size_t j = hash_bytes(key, len) & (m->cap - 1);
  for (; m->slots[j].key; j = (j + 1) & (m->cap - 1))
    if (m->slots[j].len == len && memcmp(m->slots[j].key, key, len) == 0) {
      m->slots[j].value = value;
      return 0;
    }
  m->slots[j] = (struct nd__strmap_slot){key ? key : "", (uint32_t)len, value};
  m->n++;
  return 0;
}

int64_t nd__strmap_get(const nd__strmap *m, const char *key, size_t len) {
  if (!m->cap) return -1;
  for (size_t j = hash_bytes(key, len) & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1))
    if (m->slots[j].len == len && memcmp(m->slots[j].key, key, len) == 0) return m->slots[j].value;
  return -1;
}

void nd__strmap_free(nd__strmap *m) {
  free(m->slots);
  *m = (nd__strmap){0};
}

static int pairmap_grow(nd__pairmap *m) {
  size_t cap = m->cap ? m->cap * 2 : 1024;
  uint64_t *k = calloc(cap, sizeof *k), *v = malloc(cap * sizeof *v);
  if (!k || !v) {
    free(k), free(v);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = hash_u64(m->keys[i]) & (cap - 1);
    while (k[j]) j = (j + 1) & (cap - 1);
    k[j] = m->keys[i], v[j] = m->values[i];
  }
  free(m->keys), free(m->values);
  m->keys = k, m->values = v, m->cap = cap;
  return 0;
}

int nd__pairmap_put(nd__pairmap *m, uint32_t a, uint32_t b, uint64_t value) {
  if ((m->n + 1) * 2 > m->cap && pairmap_grow(m)) return -1;
  uint64_t key = ((uint64_t)a << 32 | b) + 1;
  size_t j = hash_u64(key) & (m->cap - 1);
  for (; m->keys[j]; j = (j + 1) & (m->cap - 1))
    if (m->keys[j] == key) {
      m->values[j] = value;
      return 0;
    }
  m->keys[j] = key, m->values[j] = value, m->n++;
  return 0;
}

int nd__pairmap_get(const nd__pairmap *m, uint32_t a, uint32_t b, uint64_t *value) {
  if (!m->cap) return 0;
  uint64_t key = ((uint64_t)a << 32 | b) + 1;
  for (size_t j = hash_u64(key) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
    if (m->keys[j] == key) {
      *value = m->values[j];
      return 1;
    }
  return 0;
}

void nd__pairmap_free(nd__pairmap *m) {
  free(m->keys), free(m->values);
  *m = (nd__pairmap){0};
}
