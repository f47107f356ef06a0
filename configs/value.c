/* Typed values of configuration keys: parsing text into the struct and
 * checking ranges (format.c writes them back). The key table says which. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/keys.h"

_Static_assert(sizeof(enum nd_data_format) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum nd_placement) == sizeof(int), "enums are stored as int");

static void *at(nd_config *cfg, size_t off) { return (char *)cfg + off; }
static const void *cat(const nd_config *cfg, size_t off) { return (const char *)cfg + off; }

static int64_t get_count(const nd_config *cfg, const struct nd__key *k) {
  int64_t c;
  memcpy(&c, cat(cfg, k->count_off), sizeof c);
  return c;
}

static void set_count(nd_config *cfg, const struct nd__key *k, int64_t c) {
  memcpy(at(cfg, k->count_off), &c, sizeof c);
}

/* Writes "section.key: MESSAGE" into why and returns -1. */
static int why_f(char *why, size_t n, const struct nd__key *k, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int why_f(char *why, size_t n, const struct nd__key *k, const char *fmt, ...) {
  int used = snprintf(why, n, "%s.%s: ", k->section, k->name);
  if (used >= 0 && (size_t)used < n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + used, n - (size_t)used, fmt, ap);
    va_end(ap);
  }
  return -1;
}

void nd__key_expected(const struct nd__key *k, char *out, size_t size) {
  switch (k->type) {
  case ND__T_INT:
    if (k->names) {
      snprintf(out, size, "an integer or '%s'", k->names[0].name);
      return;
    }
    /* fall through */
  case ND__T_U64:
    snprintf(out, size, "an integer");
    return;
  case ND__T_FLOAT:
    snprintf(out, size, "a number");
    return;
  case ND__T_BOOL:
    snprintf(out, size, "true or false");
    return;
  case ND__T_INTS:
    snprintf(out, size, "a list of integers%s%s%s", k->keyword ? " or '" : "", k->keyword ? k->keyword : "",
             k->keyword ? "'" : "");
    return;
  case ND__T_STRS:
    snprintf(out, size, "a list of strings");
    return;
  case ND__T_PAIRS:
    snprintf(out, size, "a mapping of KIND: NAME");
    return;
  case ND__T_STR:
  case ND__T_ENUM:
    break;
  }
  if (!k->names) {
    snprintf(out, size, "a string");
    return;
  }
  size_t o = (size_t)snprintf(out, size, "one of: ");
  for (const struct nd__name *nm = k->names; nm->name && o < size; nm++)
    o += (size_t)snprintf(out + o, size - o, "%s%s", nm == k->names ? "" : ", ", nm->name);
}

int nd__key_wrong(const struct nd__key *k, const char *got, char *why, size_t n) {
  char expected[256];
  nd__key_expected(k, expected, sizeof expected);
  /* A list of names already holds commas; a semicolon keeps "got" apart. */
  return why_f(why, n, k, "expected %s%s got %s", expected, k->names ? ";" : ",", got);
}

static int wrong_text(const struct nd__key *k, const char *s, size_t len, char *why, size_t n) {
  char got[256];
  nd__got(s, len, got, sizeof got);
  return nd__key_wrong(k, got, why, n);
}

static int out_of_range(const struct nd__key *k, const char *s, size_t len, char *why, size_t n) {
  char shown[200];
  nd__show(shown, sizeof shown, s, len);
  if (k->type == ND__T_FLOAT)
    return why_f(why, n, k, "%s is out of range, expected a number in %c%g, %g%c", shown, k->fmin_open ? '(' : '[',
                 k->fmin, k->fmax, k->fmax_open ? ')' : ']');
  if (k->type == ND__T_U64) return why_f(why, n, k, "%s is out of range, expected 0..%" PRIu64, shown, UINT64_MAX);
  return why_f(why, n, k, "%s is out of range, expected %" PRId64 "..%" PRId64 "%s%s%s", shown, k->min, k->max,
               k->names ? " or '" : "", k->names ? k->names[0].name : "", k->names ? "'" : "");
}

static int float_in_range(const struct nd__key *k, double v) {
  return isfinite(v) && v >= k->fmin && !(k->fmin_open && v == k->fmin) && v <= k->fmax &&
         !(k->fmax_open && v == k->fmax);
}

/* Decimal digits with an optional sign: 0, -1 (not an integer) or -2 (does
 * not fit). Magnitudes up to UINT64_MAX are kept so both widths share it. */
static int parse_int(const char *s, size_t n, int *negative, uint64_t *magnitude) {
  size_t i = 0;
  uint64_t m = 0;
  int big = 0;
  *negative = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) *negative = s[i++] == '-';
  if (i == n) return -1;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    unsigned d = (unsigned)(s[i] - '0');
    if (m > (UINT64_MAX - d) / 10)
      big = 1;
    else
      m = m * 10 + d;
  }
  *magnitude = m;
  return big ? -2 : 0;
}

static int to_i64(int negative, uint64_t m, int64_t *out) {
  if (!negative && m > (uint64_t)INT64_MAX) return -1;
  if (negative && m > (uint64_t)INT64_MAX + 1) return -1;
  *out = negative ? (int64_t)(0 - m) : (int64_t)m;
  return 0;
}

/* Plain decimal or scientific notation only: strtod alone would also take
 * "inf", "nan" and hexadecimal, which a config should not. */
static int parse_number(const char *s, size_t n, double *out) {
  char buf[128];
  if (n == 0 || n >= sizeof buf) return -1;
  int digits = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] >= '0' && s[i] <= '9')
      digits = 1;
    else if (!strchr("+-.eE", s[i]) || s[i] == '\0')
      return -1;
  }
  if (!digits) return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  *out = strtod(buf, &end);
  return *end == '\0' ? 0 : -1;
}

static const struct nd__name *find_name(const struct nd__name *names, const char *s, size_t n) {
  for (const struct nd__name *nm = names; nm->name; nm++)
    if (strlen(nm->name) == n && memcmp(nm->name, s, n) == 0) return nm;
  return NULL;
}

/* An INT key's name for value v (a device count's all), or NULL. */
static const struct nd__name *int_name(const struct nd__key *k, int64_t v) {
  for (const struct nd__name *nm = k->names; nm && nm->name; nm++)
    if (nm->value == v) return nm;
  return NULL;
}

static int check_int(const struct nd__key *k, const char *s, size_t n, int64_t *out, char *why, size_t wn) {
  const struct nd__name *word = k->names ? find_name(k->names, s, n) : NULL;
  if (word) return *out = word->value, 0;
  int negative;
  uint64_t m = 0;
  int rc = parse_int(s, n, &negative, &m);
  if (rc == -1) return wrong_text(k, s, n, why, wn);
  if (rc == -2 || to_i64(negative, m, out) < 0 || *out < k->min || *out > k->max) return out_of_range(k, s, n, why, wn);
  return 0;
}

/* Strings must come back unchanged through a YAML dump. */
static int check_text(const struct nd__key *k, const char *s, size_t n, char *why, size_t wn) {
  if (n < (size_t)k->min) return why_f(why, wn, k, "must not be empty");
  if (n >= k->size) return why_f(why, wn, k, "too long, at most %zu bytes", k->size - 1);
  if (!nd__text_ok(s, n)) return why_f(why, wn, k, "must be UTF-8 text without control characters");
  return 0;
}

static int parse_bool(const char *s, size_t n, int *out) {
  static const char *const yes[] = {"true", "True", "TRUE"}, *const no[] = {"false", "False", "FALSE"};
  for (size_t i = 0; i < 3; i++) {
    if (strlen(yes[i]) == n && memcmp(yes[i], s, n) == 0) return *out = 1, 0;
    if (strlen(no[i]) == n && memcmp(no[i], s, n) == 0) return *out = 0, 0;
  }
  return -1;
}

int nd__key_set_scalar(nd_config *cfg, const struct nd__key *k, const char *s, size_t n, char *why, size_t wn) {
  void *p = at(cfg, k->off);
  switch (k->type) {
  case ND__T_INT: {
    int64_t v;
    if (check_int(k, s, n, &v, why, wn) < 0) return -1;
    memcpy(p, &v, sizeof v);
    return 0;
  }
  case ND__T_U64: {
    int negative;
    uint64_t m = 0;
    int rc = parse_int(s, n, &negative, &m);
    if (rc == -1) return wrong_text(k, s, n, why, wn);
    if (rc == -2 || (negative && m != 0)) return out_of_range(k, s, n, why, wn);
    memcpy(p, &m, sizeof m);
    return 0;
  }
  case ND__T_FLOAT: {
    double v;
    if (parse_number(s, n, &v) < 0) return wrong_text(k, s, n, why, wn);
    if (!float_in_range(k, v)) return out_of_range(k, s, n, why, wn);
    memcpy(p, &v, sizeof v);
    return 0;
  }
  case ND__T_BOOL: {
    int v;
    if (parse_bool(s, n, &v) < 0) return wrong_text(k, s, n, why, wn);
    memcpy(p, &v, sizeof v);
    return 0;
  }
  case ND__T_STR:
    if (k->names && !find_name(k->names, s, n)) return wrong_text(k, s, n, why, wn);
    if (check_text(k, s, n, why, wn) < 0) return -1;
    memcpy(p, s, n);
    ((char *)p)[n] = '\0';
    return 0;
  case ND__T_ENUM: {
    const struct nd__name *nm = find_name(k->names, s, n);
    if (!nm) return wrong_text(k, s, n, why, wn);
    memcpy(p, &nm->value, sizeof nm->value);
    return 0;
  }
  case ND__T_INTS:
  case ND__T_STRS:
  case ND__T_PAIRS:
    break;
  }
  return wrong_text(k, s, n, why, wn);
}

void nd__key_clear(nd_config *cfg, const struct nd__key *k) {
  if (!nd__key_is_composite(k)) return;
  set_count(cfg, k, 0);
  memset(at(cfg, k->off), 0, k->size * k->max_items);
  if (k->keyword) memset(at(cfg, k->keyword_off), 0, sizeof(int));
}

int nd__key_set_keyword(nd_config *cfg, const struct nd__key *k, const char *s, size_t n) {
  if (!k->keyword || strlen(k->keyword) != n || memcmp(k->keyword, s, n) != 0) return -1;
  nd__key_clear(cfg, k);
  int one = 1;
  memcpy(at(cfg, k->keyword_off), &one, sizeof one);
  return 0;
}

int nd__key_add_item(nd_config *cfg, const struct nd__key *k, const char *s, size_t n, char *why, size_t wn) {
  int64_t count = get_count(cfg, k);
  if (count < 0 || (uint64_t)count >= k->max_items)
    return why_f(why, wn, k, "too many entries, at most %zu", k->max_items);
  char *item = (char *)at(cfg, k->off) + (size_t)count * k->size;
  if (k->type == ND__T_INTS) {
    int64_t v;
    if (check_int(k, s, n, &v, why, wn) < 0) return -1;
    memcpy(item, &v, sizeof v);
  } else if (k->type == ND__T_STRS) {
    if (check_text(k, s, n, why, wn) < 0) return -1;
    memcpy(item, s, n);
    item[n] = '\0';
  } else {
    return wrong_text(k, s, n, why, wn);
  }
  set_count(cfg, k, count + 1);
  return 0;
}

/* kernels.override names: the field sizes of struct nd_kernel_override. */
static int check_name(const struct nd__key *k, const char *what, const char *s, size_t n, char *why, size_t wn) {
  if (n == 0) return why_f(why, wn, k, "%s must not be empty", what);
  if (n >= ND_NAME_MAX) return why_f(why, wn, k, "%s too long, at most %d bytes", what, ND_NAME_MAX - 1);
  if (!nd__text_ok(s, n)) return why_f(why, wn, k, "%s must be UTF-8 text without control characters", what);
  return 0;
}

int nd__key_check_kind(const nd_config *cfg, const struct nd__key *k, const char *s, size_t n, char *why, size_t wn) {
  int64_t count = get_count(cfg, k);
  if (check_name(k, "kind", s, n, why, wn) < 0) return -1;
  const struct nd_kernel_override *o = cat(cfg, k->off);
  for (int64_t i = 0; i < count; i++) {
    if (strlen(o[i].kind) == n && memcmp(o[i].kind, s, n) == 0) {
      char shown[200];
      nd__show(shown, sizeof shown, s, n);
      snprintf(why, wn, "duplicate key '%s.%s.%s'", k->section, k->name, shown);
      return -1;
    }
  }
  if (count < 0 || (uint64_t)count >= k->max_items)
    return why_f(why, wn, k, "too many entries, at most %zu", k->max_items);
  return 0;
}

int nd__key_add_pair(nd_config *cfg, const struct nd__key *k, const char *kind, size_t klen, const char *name,
                     size_t nlen, char *why, size_t wn) {
  if (nd__key_check_kind(cfg, k, kind, klen, why, wn) < 0) return -1;
  if (check_name(k, "name", name, nlen, why, wn) < 0) return -1;
  int64_t count = get_count(cfg, k);
  struct nd_kernel_override *o = (struct nd_kernel_override *)at(cfg, k->off) + count;
  memcpy(o->kind, kind, klen);
  o->kind[klen] = '\0';
  memcpy(o->name, name, nlen);
  o->name[nlen] = '\0';
  set_count(cfg, k, count + 1);
  return 0;
}

/* A string field as stored: its length, or -1 when it lacks a terminator. */
static long stored_len(const char *s, size_t size) {
  const char *nul = memchr(s, '\0', size);
  return nul ? (long)(nul - s) : -1;
}

int nd__key_check(const nd_config *cfg, const struct nd__key *k, char *why, size_t wn) {
  const void *p = cat(cfg, k->off);
  char text[64];
  switch (k->type) {
  case ND__T_INT: {
    int64_t v;
    memcpy(&v, p, sizeof v);
    snprintf(text, sizeof text, "%" PRId64, v);
    if ((v < k->min || v > k->max) && !int_name(k, v)) return out_of_range(k, text, strlen(text), why, wn);
    return 0;
  }
  case ND__T_U64:
    return 0;
  case ND__T_FLOAT: {
    double v;
    memcpy(&v, p, sizeof v);
    snprintf(text, sizeof text, "%g", v);
    if (!float_in_range(k, v)) return out_of_range(k, text, strlen(text), why, wn);
    return 0;
  }
  case ND__T_BOOL: {
    int v;
    memcpy(&v, p, sizeof v);
    return v == 0 || v == 1 ? 0 : why_f(why, wn, k, "expected true or false, got %d", v);
  }
  case ND__T_STR: {
    long len = stored_len(p, k->size);
    if (len < 0) return why_f(why, wn, k, "too long, at most %zu bytes", k->size - 1);
    if (k->names && !find_name(k->names, p, (size_t)len)) return wrong_text(k, p, (size_t)len, why, wn);
    return check_text(k, p, (size_t)len, why, wn);
  }
  case ND__T_ENUM: {
    int v;
    memcpy(&v, p, sizeof v);
    for (const struct nd__name *nm = k->names; nm->name; nm++)
      if (nm->value == v) return 0;
    return why_f(why, wn, k, "unknown value %d", v);
  }
  case ND__T_INTS:
  case ND__T_STRS:
  case ND__T_PAIRS:
    break;
  }
  int64_t count = get_count(cfg, k);
  if (count < 0 || (uint64_t)count > k->max_items)
    return why_f(why, wn, k, "too many entries, at most %zu", k->max_items);
  for (int64_t i = 0; i < count; i++) {
    const char *item = (const char *)p + (size_t)i * k->size;
    if (k->type == ND__T_INTS) {
      int64_t v;
      memcpy(&v, item, sizeof v);
      snprintf(text, sizeof text, "%" PRId64, v);
      if (v < k->min || v > k->max) return out_of_range(k, text, strlen(text), why, wn);
    } else if (k->type == ND__T_STRS) {
      long len = stored_len(item, k->size);
      if (len < 0) return why_f(why, wn, k, "too long, at most %zu bytes", k->size - 1);
      if (check_text(k, item, (size_t)len, why, wn) < 0) return -1;
    } else {
      const struct nd_kernel_override *o = (const void *)item;
      long kl = stored_len(o->kind, sizeof o->kind), nl = stored_len(o->name, sizeof o->name);
      if (kl < 0 || nl < 0) return why_f(why, wn, k, "too long, at most %d bytes", ND_NAME_MAX - 1);
      if (check_name(k, "kind", o->kind, (size_t)kl, why, wn) < 0) return -1;
      if (check_name(k, "name", o->name, (size_t)nl, why, wn) < 0) return -1;
    }
  }
  return 0;
}
