/* The two hash maps of a BPE tokenizer, open addressing with linear probing:
 * strings to ids (the vocabulary, the word cache) and id pairs to their
 * merge (rank and result). */
#ifndef ND_TEXT_MAP_H
#define ND_TEXT_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Keys are not copied: they must outlive the map. */
typedef struct nd__strmap {
  struct nd__strmap_slot {
    const char *key;
    uint32_t len, value;
  } *slots;
  size_t cap, n; /* cap a power of two */
} nd__strmap;

/* -1 when out of memory; a key already there gets the new value. */
int nd__strmap_put(nd__strmap *m, const char *key, size_t len, uint32_t value);
/* The value, or -1 when absent. */
int64_t nd__strmap_get(const nd__strmap *m, const char *key, size_t len);
void nd__strmap_free(nd__strmap *m);

typedef struct nd__pairmap {
  uint64_t *keys, *values; /* key 0 is empty: keys are stored as pair + 1 */
  size_t cap, n;
} nd__pairmap;

int nd__pairmap_put(nd__pairmap *m, uint32_t a, uint32_t b, uint64_t value);
/* 1 and *value when present, else 0. */
int nd__pairmap_get(const nd__pairmap *m, uint32_t a, uint32_t b, uint64_t *value);
void nd__pairmap_free(nd__pairmap *m);

#endif
