/* FNV-1a, 64 bits: what tells configurations and files apart across the
 * processes of a launch (a difference, not an attacker, is what it must catch). */
#ifndef ND_COMMON_HASH_H
#define ND_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define ND_FNV_BASIS 14695981039346656037ULL

static inline uint64_t nd__fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

#endif
