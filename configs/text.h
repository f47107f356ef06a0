/* Text helpers of the configuration layer: a growing string, quoting for
 * YAML and for messages, and the "FILE:LINE:COL: error: " prefix. */
#ifndef ND_CONFIGS_TEXT_H
#define ND_CONFIGS_TEXT_H

#include <stddef.h>

#include "ndgraph/ndgraph.h"

/* A growing string; a failed allocation sticks in oom so callers test once. */
struct nd__sb {
  char *buf;
  size_t len, cap;
  int oom;
};

void nd__sb_add(struct nd__sb *sb, const char *s, size_t n);
void nd__sb_printf(struct nd__sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a YAML double-quoted scalar. */
void nd__sb_quote(struct nd__sb *sb, const char *s, size_t n);
void nd__sb_free(struct nd__sb *sb);

/* Writes s for a one-line message: control and non-ASCII bytes escaped, long
 * text cut with "...". */
void nd__show(char *out, size_t size, const char *s, size_t n);
/* How a given value reads in "got ..." of a message: 'TEXT' or "an empty value". */
void nd__got(const char *s, size_t n, char *out, size_t size);
/* Whether s is UTF-8 without control characters (what a dump can write back). */
int nd__text_ok(const char *s, size_t n);
/* Levenshtein distance, ignoring ASCII case; SIZE_MAX for over-long input. */
size_t nd__edit_distance(const char *a, size_t an, const char *b, size_t bn);
/* Fills err with "FILE:LINE:COL: error: MESSAGE" and returns ND_ECONFIG. */
int nd__config_error(nd_error *err, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
