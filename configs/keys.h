/* The table of configuration keys, and the typed operations every loader
 * (YAML file, --set, defaults) goes through, so that a key is described once. */
#ifndef ND_CONFIGS_KEYS_H
#define ND_CONFIGS_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "configs/config.h"
#include "configs/text.h"

enum nd__type {
  ND__T_INT,   /* int64_t in min..max, or one of names (a word for a value outside) */
  ND__T_U64,   /* uint64_t, any value */
  ND__T_FLOAT, /* double in fmin..fmax (fmin excluded when fmin_open, fmax when fmax_open) */
  ND__T_BOOL,  /* int, 0 or 1 */
  ND__T_STR,   /* char[size]; min is the least length; names restricts values */
  ND__T_ENUM,  /* an enum (int-sized) spelled by names */
  ND__T_INTS,  /* int64_t[max_items] with an int64_t count; keyword sets a flag */
  ND__T_STRS,  /* char[max_items][size] with an int64_t count */
  ND__T_PAIRS, /* struct nd_kernel_override[max_items] with an int64_t count */
};

struct nd__name {
  const char *name;
  int value;
};

struct nd__key {
  const char *section, *name;
  enum nd__type type;
  size_t off;                   /* the value, or the first item of a list */
  size_t count_off;             /* lists: the int64_t number of items */
  size_t size;                  /* strings: buffer size; lists: size of one item */
  size_t max_items;             /* lists */
  int64_t min, max;             /* integers, items of integer lists, least string length */
  double fmin, fmax;            /* numbers */
  int fmin_open, fmax_open;     /* numbers: fmin (fmax) itself is not allowed */
  const struct nd__name *names; /* ND__T_ENUM, the only strings allowed, or an INT's words; NULL-ended */
  const char *keyword;          /* ND__T_INTS: a word accepted in place of the list */
  size_t keyword_off;           /* the int flag the keyword sets */
  const char *def;              /* default, spelled as --set takes it; NULL: empty list */
  unsigned arch;                /* bit 1 << enum nd_arch of each architecture taking it; 0: all */
};

extern const struct nd__key nd__keys[];
extern const size_t nd__n_keys;
extern const char *const nd__sections[];
extern const size_t nd__n_sections;

/* Index of the key "section"/"name" (lengths given: YAML text is not always
 * NUL-free), or -1. */
int nd__key_find(const char *section, size_t slen, const char *name, size_t nlen);
/* Index of "section.key", or -1. */
int nd__key_find_dotted(const char *dotted, size_t len);
int nd__section_find(const char *name, size_t len);
/* The index of a key in the table, for nd_config.loc. */
static inline size_t nd__key_index(const struct nd__key *k) { return (size_t)(k - nd__keys); }
/* Whether values of this key are lists or mappings (read as YAML by --set). */
int nd__key_is_composite(const struct nd__key *k);

/* "did you mean" candidates: the closest name, or NULL when none is close. */
const char *nd__suggest_section(const char *name, size_t len);
/* Writes "section.key" of the closest key into out (empty when none is close). */
void nd__suggest_key(const char *section, size_t slen, const char *name, size_t nlen, char *out, size_t size);

/* What the key takes, for "expected ..." messages: "an integer", "one of: a, b". */
void nd__key_expected(const struct nd__key *k, char *out, size_t size);

/* "section.key: expected X, got GOT", for a value of the wrong shape. */
int nd__key_wrong(const struct nd__key *k, const char *got, char *why, size_t n);

/* Typed setters. Each returns 0, or -1 with a message naming the key in why
 * (no position: the caller knows where the text came from). */
int nd__key_set_scalar(nd_config *cfg, const struct nd__key *k, const char *s, size_t n, char *why, size_t wn);
void nd__key_clear(nd_config *cfg, const struct nd__key *k);
/* Lists: the keyword ("auto") given instead of a list. */
int nd__key_set_keyword(nd_config *cfg, const struct nd__key *k, const char *s, size_t n);
int nd__key_add_item(nd_config *cfg, const struct nd__key *k, const char *s, size_t n, char *why, size_t wn);
/* Mappings: checks the KIND before its value is read, then stores the pair. */
int nd__key_check_kind(const nd_config *cfg, const struct nd__key *k, const char *s, size_t n, char *why, size_t wn);
int nd__key_add_pair(nd_config *cfg, const struct nd__key *k, const char *kind, size_t klen, const char *name,
                     size_t nlen, char *why, size_t wn);
/* The key's own range, on a config that may have been written directly. */
int nd__key_check(const nd_config *cfg, const struct nd__key *k, char *why, size_t wn);

/* Appends the value as text: as_yaml quotes strings (dump); otherwise plain
 * strings come out raw, as --set takes them (get). */
void nd__key_format(const nd_config *cfg, const struct nd__key *k, int as_yaml, struct nd__sb *sb);
/* The shortest text that reads back as the same double. */
void nd__format_double(double v, char *buf, size_t size);

#endif
