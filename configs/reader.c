/* YAML events from libyaml with their positions, for the configuration
 * loader and for --set values. */
#include "configs/reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

int nd__reader_open(struct nd__reader *r, const char *file, const char *buf, size_t len, int col_base, nd_error *err) {
  memset(r, 0, sizeof *r);
  r->file = file;
  r->buf = buf;
  r->len = len;
  r->col_base = col_base;
  r->err = err;
  if (!yaml_parser_initialize(&r->parser)) return nd__fail(err, ND_ENOMEM, "%s: error: out of memory", file);
  yaml_parser_set_input_string(&r->parser, (const unsigned char *)buf, len);
  return 0;
}

void nd__reader_close(struct nd__reader *r) {
  if (r->has_ev) yaml_event_delete(&r->ev);
  r->has_ev = 0;
  yaml_parser_delete(&r->parser);
}

nd_loc nd__reader_loc(const struct nd__reader *r, yaml_mark_t mark) {
  nd_loc loc = {(int)mark.line + 1, (int)mark.column + 1, 0};
  if (r->col_base) {
    /* A --set value is one line of the command. libyaml ends the stream on
     * a line of its own, so a mark there still counts along the value; a
     * value with real line breaks leaves only its start to point at. */
    loc.line = 1;
    loc.from_set = 1;
    if (mark.line == 0)
      loc.col = r->col_base + (int)mark.column;
    else if (!memchr(r->buf, '\n', r->len) && !memchr(r->buf, '\r', r->len))
      loc.col = r->col_base + (int)mark.index;
    else
      loc.col = r->col_base;
  }
  return loc;
}

static int vfail(const struct nd__reader *r, nd_loc loc, const char *fmt, va_list ap) {
  char msg[ND_ERROR_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  return nd__config_error(r->err, r->file, loc.line, loc.col, "%s", msg);
}

int nd__reader_fail(const struct nd__reader *r, yaml_mark_t mark, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vfail(r, nd__reader_loc(r, mark), fmt, ap);
  va_end(ap);
  return rc;
}

/* libyaml gives the byte offset, not a mark, for bad encodings. */
static yaml_mark_t mark_of_offset(const struct nd__reader *r, size_t offset) {
  yaml_mark_t m = {0, 0, 0};
  if (offset > r->len) offset = r->len;
  for (size_t i = 0; i < offset; i++) {
    unsigned char c = (unsigned char)r->buf[i];
    if (c == '\n') {
      m.line++;
      m.column = 0;
    } else if ((c & 0xc0) != 0x80) {
      m.column++;
    }
  }
  m.index = offset;
  return m;
}

static int syntax_error(struct nd__reader *r) {
  const yaml_parser_t *p = &r->parser;
  if (p->error == YAML_MEMORY_ERROR) return nd__fail(r->err, ND_ENOMEM, "%s: error: out of memory", r->file);
  yaml_mark_t mark = p->error == YAML_READER_ERROR ? mark_of_offset(r, p->problem_offset) : p->problem_mark;
  const char *problem = p->problem ? p->problem : "syntax error";
  if (p->context) return nd__reader_fail(r, mark, "invalid YAML: %s %s", problem, p->context);
  return nd__reader_fail(r, mark, "invalid YAML: %s", problem);
}

int nd__reader_next(struct nd__reader *r) {
  if (r->has_ev) yaml_event_delete(&r->ev);
  r->has_ev = 0;
  if (!yaml_parser_parse(&r->parser, &r->ev)) return syntax_error(r);
  r->has_ev = 1;
  /* Aliases would let one node stand for many keys; nothing needs them. */
  if (r->ev.type == YAML_ALIAS_EVENT) return nd__reader_fail(r, r->ev.start_mark, "aliases are not supported");
  return 0;
}

int nd__reader_at_null(const struct nd__reader *r) {
  if (r->ev.type != YAML_SCALAR_EVENT || r->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
  const char *s = (const char *)r->ev.data.scalar.value;
  size_t n = r->ev.data.scalar.length;
  return n == 0 || (n == 1 && s[0] == '~') ||
         (n == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4)));
}

/* The current event where a value of k was expected and does not fit. */
static int wrong(const struct nd__reader *r, const struct nd__key *k) {
  char got[256], why[ND_ERROR_MAX];
  if (r->ev.type == YAML_SCALAR_EVENT)
    nd__got((const char *)r->ev.data.scalar.value, r->ev.data.scalar.length, got, sizeof got);
  else if (r->ev.type == YAML_SEQUENCE_START_EVENT)
    snprintf(got, sizeof got, "a list");
  else if (r->ev.type == YAML_MAPPING_START_EVENT)
    snprintf(got, sizeof got, "a mapping");
  else
    snprintf(got, sizeof got, "nothing");
  nd__key_wrong(k, got, why, sizeof why);
  return nd__reader_fail(r, r->ev.start_mark, "%s", why);
}

static const char *scalar(const struct nd__reader *r) { return (const char *)r->ev.data.scalar.value; }
static size_t scalar_len(const struct nd__reader *r) { return r->ev.data.scalar.length; }

/* A list item that is itself a list or a mapping: "got a list" alone would
 * name what was expected. */
static int wrong_item(const struct nd__reader *r, const struct nd__key *k, int item) {
  char got[128], why[ND_ERROR_MAX];
  snprintf(got, sizeof got, "a list whose item %d is %s", item,
           r->ev.type == YAML_SEQUENCE_START_EVENT ? "a list" : "a mapping");
  nd__key_wrong(k, got, why, sizeof why);
  return nd__reader_fail(r, r->ev.start_mark, "%s", why);
}

static int read_list(struct nd__reader *r, nd_config *cfg, const struct nd__key *k) {
  char why[ND_ERROR_MAX];
  int rc;
  nd__key_clear(cfg, k);
  for (int item = 1;; item++) {
    if ((rc = nd__reader_next(r)) < 0) return rc;
    if (r->ev.type == YAML_SEQUENCE_END_EVENT) return 0;
    if (r->ev.type != YAML_SCALAR_EVENT) return wrong_item(r, k, item);
    if (nd__key_add_item(cfg, k, scalar(r), scalar_len(r), why, sizeof why) < 0)
      return nd__reader_fail(r, r->ev.start_mark, "%s", why);
  }
}

static int read_pairs(struct nd__reader *r, nd_config *cfg, const struct nd__key *k) {
  char why[ND_ERROR_MAX], kind[ND_NAME_MAX];
  size_t klen;
  int rc;
  nd__key_clear(cfg, k);
  for (;;) {
    if ((rc = nd__reader_next(r)) < 0) return rc;
    if (r->ev.type == YAML_MAPPING_END_EVENT) return 0;
    if (r->ev.type != YAML_SCALAR_EVENT) return wrong(r, k);
    if (nd__key_check_kind(cfg, k, scalar(r), scalar_len(r), why, sizeof why) < 0)
      return nd__reader_fail(r, r->ev.start_mark, "%s", why);
    klen = scalar_len(r); /* checked above: shorter than kind */
    memcpy(kind, scalar(r), klen);
    if ((rc = nd__reader_next(r)) < 0) return rc;
    if (r->ev.type != YAML_SCALAR_EVENT) return wrong(r, k);
    if (nd__key_add_pair(cfg, k, kind, klen, scalar(r), scalar_len(r), why, sizeof why) < 0)
      return nd__reader_fail(r, r->ev.start_mark, "%s", why);
  }
}

int nd__reader_value(struct nd__reader *r, nd_config *cfg, const struct nd__key *k) {
  char why[ND_ERROR_MAX];
  if (!nd__key_is_composite(k)) {
    if (r->ev.type != YAML_SCALAR_EVENT) return wrong(r, k);
    if (nd__key_set_scalar(cfg, k, scalar(r), scalar_len(r), why, sizeof why) < 0)
      return nd__reader_fail(r, r->ev.start_mark, "%s", why);
    return 0;
  }
  if (r->ev.type == YAML_SCALAR_EVENT) {
    if (nd__reader_at_null(r)) {
      nd__key_clear(cfg, k);
      return 0;
    }
    if (nd__key_set_keyword(cfg, k, scalar(r), scalar_len(r)) == 0) return 0;
    return wrong(r, k);
  }
  if (k->type == ND__T_PAIRS) return r->ev.type == YAML_MAPPING_START_EVENT ? read_pairs(r, cfg, k) : wrong(r, k);
  return r->ev.type == YAML_SEQUENCE_START_EVENT ? read_list(r, cfg, k) : wrong(r, k);
}
