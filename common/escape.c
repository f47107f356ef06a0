/* Escaping text from input for the terminal (common/escape.h). */
#include "common/escape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 character at p that prints (not a C1
 * control), 0 when there is none there. */
static size_t printable_utf8(const unsigned char *p) {
  size_t more;
  uint32_t cp, least;
  if ((p[0] & 0xe0) == 0xc0)
    more = 1, cp = p[0] & 0x1f, least = 0x80;
  else if ((p[0] & 0xf0) == 0xe0)
    more = 2, cp = p[0] & 0x0f, least = 0x800;
  else if ((p[0] & 0xf8) == 0xf0)
    more = 3, cp = p[0] & 0x07, least = 0x10000;
  else
    return 0;
  for (size_t k = 1; k <= more; k++) {
    if ((p[k] & 0xc0) != 0x80) return 0; /* the terminating NUL stops here too */
    cp = cp << 6 | (p[k] & 0x3f);
  }
  if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f) return 0;
  return more + 1;
}

const char *nd__escape(char *out, size_t size, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t o = 0;
  if (size == 0) return out;
  while (*p) {
    size_t n = *p >= 0x20 && *p < 0x7f ? 1 : *p >= 0x80 ? printable_utf8(p) : 0;
    size_t take = n ? n : 4;
    if (o + take >= size) break;
    if (n)
      memcpy(out + o, p, n);
    else
      snprintf(out + o, 5, "\\x%02x", *p);
    o += take;
    p += n ? n : 1;
  }
  out[o] = '\0';
  return out;
}
