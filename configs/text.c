/* Strings of the configuration layer: a growing buffer, YAML quoting and
 * error prefixes that name the file and position. */
#include "configs/text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static int sb_reserve(struct nd__sb *sb, size_t extra) {
  if (sb->oom) return -1;
  if (extra < sb->cap - sb->len) return 0;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap - sb->len <= extra) {
    if (cap > SIZE_MAX / 2) goto fail;
    cap *= 2;
  }
  char *p = realloc(sb->buf, cap);
  if (!p) goto fail;
  sb->buf = p;
  sb->cap = cap;
  return 0;
fail:
  sb->oom = 1;
  return -1;
}

void nd__sb_add(struct nd__sb *sb, const char *s, size_t n) {
  if (sb_reserve(sb, n) < 0) return;
  memcpy(sb->buf + sb->len, s, n);
  sb->len += n;
  sb->buf[sb->len] = '\0';
}

void nd__sb_printf(struct nd__sb *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || sb_reserve(sb, (size_t)n) < 0) return;
  va_start(ap, fmt);
  vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

void nd__sb_quote(struct nd__sb *sb, const char *s, size_t n) {
  nd__sb_add(sb, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      nd__sb_add(sb, esc, 2);
    } else if (c < 0x20 || c == 0x7f) {
      /* Validated strings hold none; escaping keeps a poked struct dumpable. */
      nd__sb_printf(sb, "\\x%02x", c);
    } else {
      nd__sb_add(sb, (const char *)&c, 1);
    }
  }
  nd__sb_add(sb, "\"", 1);
}

void nd__sb_free(struct nd__sb *sb) {
  free(sb->buf);
  memset(sb, 0, sizeof *sb);
}

void nd__show(char *out, size_t size, const char *s, size_t n) {
  enum { SHOW_MAX = 40 };
  size_t o = 0;
  if (size == 0) return;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char piece[8];
    if (i == SHOW_MAX) {
      snprintf(piece, sizeof piece, "...");
    } else if (c >= 0x20 && c < 0x7f) {
      piece[0] = (char)c;
      piece[1] = '\0';
    } else {
      snprintf(piece, sizeof piece, "\\x%02x", c);
    }
    size_t pl = strlen(piece);
    if (o + pl >= size) break;
    memcpy(out + o, piece, pl);
    o += pl;
    if (i == SHOW_MAX) break;
  }
  out[o] = '\0';
}

void nd__got(const char *s, size_t n, char *out, size_t size) {
  char shown[200];
  if (n == 0) {
    snprintf(out, size, "an empty value");
    return;
  }
  nd__show(shown, sizeof shown, s, n);
  snprintf(out, size, "'%s'", shown);
}

int nd__text_ok(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned c = p[i];
    size_t more;
    uint32_t cp, least;
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return 0;
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      more = 1, cp = c & 0x1f, least = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      more = 2, cp = c & 0x0f, least = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      more = 3, cp = c & 0x07, least = 0x10000;
    } else {
      return 0;
    }
    if (n - i <= more) return 0;
    for (size_t j = 1; j <= more; j++) {
      if ((p[i + j] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (p[i + j] & 0x3f);
    }
    /* Overlong forms, surrogates and C1 controls would not survive a dump. */
    if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0)) return 0;
    i += more + 1;
  }
  return 1;
}

size_t nd__edit_distance(const char *a, size_t an, const char *b, size_t bn) {
  enum { LONGEST = 64 };
  size_t row[LONGEST + 1];
  if (an > LONGEST || bn > LONGEST) return SIZE_MAX;
  for (size_t j = 0; j <= bn; j++) row[j] = j;
  for (size_t i = 1; i <= an; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= bn; j++) {
      size_t up = row[j];
      int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
      size_t best = diag + (same ? 0 : 1);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[bn];
}

int nd__config_error(nd_error *err, const char *file, int line, int col, const char *fmt, ...) {
  char msg[ND_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return nd__fail(err, ND_ECONFIG, "%s:%d:%d: error: %s", file, line, col, msg);
}
