/* A libyaml event reader that reports errors as "FILE:LINE:COL: error: ...",
 * shared by files and by the list values of --set. */
#ifndef ND_CONFIGS_READER_H
#define ND_CONFIGS_READER_H

#include <yaml.h>

#include "configs/keys.h"

struct nd__reader {
  yaml_parser_t parser;
  yaml_event_t ev; /* the current event, valid when has_ev */
  int has_ev;
  const char *file;
  const char *buf;
  size_t len;
  /* 0 for files. For --set, the column of the value inside the assignment:
   * positions become line 1 and that column plus the offset in the value. */
  int col_base;
  nd_error *err;
};

int nd__reader_open(struct nd__reader *r, const char *file, const char *buf, size_t len, int col_base, nd_error *err);
void nd__reader_close(struct nd__reader *r);
/* Moves to the next event: 0, or ND_ECONFIG / ND_ENOMEM with err filled. */
int nd__reader_next(struct nd__reader *r);
/* The 1-based position of a mark in messages. */
nd_loc nd__reader_loc(const struct nd__reader *r, yaml_mark_t mark);
int nd__reader_fail(const struct nd__reader *r, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether the current event is a plain empty, ~ or null scalar. */
int nd__reader_at_null(const struct nd__reader *r);
/* Reads the value of k starting at the current event into cfg; the current
 * event is then the value's last one. */
int nd__reader_value(struct nd__reader *r, nd_config *cfg, const struct nd__key *k);

#endif
