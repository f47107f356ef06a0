/* Writing key values back as text, for nd_config_get and nd_config_dump. The
 * text must read back to the same value through the loader. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/keys.h"

static const void *cat(const nd_config *cfg, size_t off) { return (const char *)cfg + off; }

/* A stored string's length; the whole buffer when a direct write left no terminator. */
static size_t stored_len(const char *s, size_t size) {
  const char *nul = memchr(s, '\0', size);
  return nul ? (size_t)(nul - s) : size;
}

void nd__format_double(double v, char *buf, size_t size) {
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) return;
  }
}

void nd__key_format(const nd_config *cfg, const struct nd__key *k, int as_yaml, struct nd__sb *sb) {
  const void *p = cat(cfg, k->off);
  switch (k->type) {
  case ND__T_INT: {
    int64_t v;
    memcpy(&v, p, sizeof v);
    for (const struct nd__name *nm = k->names; nm && nm->name; nm++)
      if (nm->value == v) {
        nd__sb_printf(sb, "%s", nm->name);
        return;
      }
    nd__sb_printf(sb, "%" PRId64, v);
    return;
  }
  case ND__T_U64: {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    nd__sb_printf(sb, "%" PRIu64, v);
    return;
  }
  case ND__T_FLOAT: {
    double v;
    char buf[64];
    memcpy(&v, p, sizeof v);
    nd__format_double(v, buf, sizeof buf);
    nd__sb_printf(sb, "%s", buf);
    return;
  }
  case ND__T_BOOL: {
    int v;
    memcpy(&v, p, sizeof v);
    nd__sb_printf(sb, "%s", v ? "true" : "false");
    return;
  }
  case ND__T_STR: {
    size_t n = stored_len(p, k->size);
    if (as_yaml)
      nd__sb_quote(sb, p, n);
    else
      nd__sb_add(sb, p, n);
    return;
  }
  case ND__T_ENUM: {
    int v;
    memcpy(&v, p, sizeof v);
    for (const struct nd__name *nm = k->names; nm->name; nm++)
      if (nm->value == v) nd__sb_printf(sb, "%s", nm->name);
    return;
  }
  case ND__T_INTS:
  case ND__T_STRS:
  case ND__T_PAIRS:
    break;
  }
  if (k->keyword) {
    int flag;
    memcpy(&flag, cat(cfg, k->keyword_off), sizeof flag);
    if (flag) {
      nd__sb_printf(sb, "%s", k->keyword);
      return;
    }
  }
  int64_t count;
  memcpy(&count, cat(cfg, k->count_off), sizeof count);
  if (count < 0) count = 0;
  if ((uint64_t)count > k->max_items) count = (int64_t)k->max_items;
  nd__sb_add(sb, k->type == ND__T_PAIRS ? "{" : "[", 1);
  for (int64_t i = 0; i < count; i++) {
    const char *item = (const char *)p + (size_t)i * k->size;
    if (i) nd__sb_add(sb, ", ", 2);
    if (k->type == ND__T_INTS) {
      int64_t v;
      memcpy(&v, item, sizeof v);
      nd__sb_printf(sb, "%" PRId64, v);
    } else if (k->type == ND__T_STRS) {
      nd__sb_quote(sb, item, stored_len(item, k->size));
    } else {
      const struct nd_kernel_override *o = (const void *)item;
      nd__sb_quote(sb, o->kind, stored_len(o->kind, sizeof o->kind));
      nd__sb_add(sb, ": ", 2);
      nd__sb_quote(sb, o->name, stored_len(o->name, sizeof o->name));
    }
  }
  nd__sb_add(sb, k->type == ND__T_PAIRS ? "}" : "]", 1);
}
