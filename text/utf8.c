/* Replacing invalid UTF-8 as Python and Rust do, so that ndgraph and a
 * Python user of `tokenizers` tokenize the same text. */
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t nd__utf8_valid_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte (Unicode Table 3-7) */
  if (c >= 0xC2 && c <= 0xDF) need = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F; /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else
    return 0;
  if (n < need || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < need; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return need;
}

/* Length of the maximal ill-formed subpart at s: the lead byte and the
 * continuation bytes that a valid sequence could still have had. */
static size_t bad_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
  if (need == 1) return 1;
  unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
  unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
  size_t i = 1;
  if (i < n && s[i] >= lo && s[i] <= hi) {
    i++;
    while (i < need && i < n && s[i] >= 0x80 && s[i] <= 0xBF) i++;
  }
  return i;
}

int nd__grow(char **buf, size_t len, size_t extra, size_t *cap) {
  if (len + extra <= *cap) return 0;
  size_t c = *cap ? *cap : 64;
  while (c < len + extra) c *= 2;
  char *p = realloc(*buf, c);
  if (!p) return -1;
  *buf = p, *cap = c;
  return 0;
}

int nd__utf8_clean(const char *text, size_t n, char **out, size_t *len, size_t *cap) {
  const unsigned char *s = (const unsigned char *)text;
  /* U+FFFD is 3 bytes for a subpart of at least 1: at most 3n */
  if (nd__grow(out, *len, 3 * n + 1, cap)) return -1;
  char *o = *out + *len;
  size_t i = 0;
  while (i < n) {
    size_t start = i;
    while (i < n && s[i] < 0x80) i++; /* the common case, a byte at a time */
    size_t v;
    while (i < n && (v = nd__utf8_valid_len(s + i, n - i)) > 0) i += v;
    memcpy(o, s + start, i - start), o += i - start;
    if (i < n && s[i] >= 0x80) {
      i += bad_len(s + i, n - i);
      memcpy(o, "\xEF\xBF\xBD", 3), o += 3;
    }
  }
  *len = (size_t)(o - *out);
  return 0;
}

size_t nd__utf8_put(uint32_t cp, char *out) {
  unsigned char *o = (unsigned char *)out;
  if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
  if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

static int printable(int c) { return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF); }

uint32_t nd__byte_level_char(unsigned char b) {
  if (printable(b)) return b;
  uint32_t n = 256;
  for (int c = 0; c < b; c++) n += !printable(c);
  return n;
}
