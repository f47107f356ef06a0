/* Loading YAML files: a mapping of sections, each a mapping of keys. The
 * values land in a copy of the config, so that a failed load changes nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/file.h"
#include "configs/reader.h"

#define ND__CONFIG_MAX_BYTES (1024 * 1024)

/* Positions given earlier in this load, for "duplicate ... (first at L:C)". */
struct seen {
  nd_loc section[ND_MAX_SECTIONS];
  nd_loc key[sizeof((nd_config *)0)->loc / sizeof(nd_loc)];
};

/* What stands where a mapping or a name was expected, for "got ...". */
static const char *shape(const struct nd__reader *r, char *buf, size_t size) {
  if (r->ev.type == YAML_SEQUENCE_START_EVENT) return "a list";
  if (r->ev.type == YAML_MAPPING_START_EVENT) return "a mapping";
  if (r->ev.type != YAML_SCALAR_EVENT) return "nothing";
  nd__got((const char *)r->ev.data.scalar.value, r->ev.data.scalar.length, buf, size);
  return buf;
}

static int read_key(struct nd__reader *r, nd_config *cfg, struct seen *seen, int section) {
  const char *sec = nd__sections[section];
  const char *name = (const char *)r->ev.data.scalar.value;
  size_t len = r->ev.data.scalar.length;
  char shown[200];
  nd__show(shown, sizeof shown, name, len);
  int i = nd__key_find(sec, strlen(sec), name, len);
  if (i < 0) {
    char best[160];
    nd__suggest_key(sec, strlen(sec), name, len, best, sizeof best);
    if (best[0])
      return nd__reader_fail(r, r->ev.start_mark, "unknown key '%s.%s'; did you mean '%s'?", sec, shown, best);
    return nd__reader_fail(r, r->ev.start_mark, "unknown key '%s.%s'", sec, shown);
  }
  if (seen->key[i].line)
    return nd__reader_fail(r, r->ev.start_mark, "duplicate key '%s.%s' (first at %d:%d)", sec, shown, seen->key[i].line,
                           seen->key[i].col);
  seen->key[i] = nd__reader_loc(r, r->ev.start_mark);
  int rc = nd__reader_next(r);
  if (rc < 0) return rc;
  cfg->loc[i] = nd__reader_loc(r, r->ev.start_mark);
  return nd__reader_value(r, cfg, &nd__keys[i]);
}

static int read_section(struct nd__reader *r, nd_config *cfg, struct seen *seen) {
  const char *name = (const char *)r->ev.data.scalar.value;
  size_t len = r->ev.data.scalar.length;
  char shown[200], got[256];
  int rc;
  nd__show(shown, sizeof shown, name, len);
  int s = nd__section_find(name, len);
  if (s < 0) {
    const char *best = nd__suggest_section(name, len);
    if (best) return nd__reader_fail(r, r->ev.start_mark, "unknown section '%s'; did you mean '%s'?", shown, best);
    return nd__reader_fail(r, r->ev.start_mark, "unknown section '%s'", shown);
  }
  if (seen->section[s].line)
    return nd__reader_fail(r, r->ev.start_mark, "duplicate section '%s' (first at %d:%d)", shown, seen->section[s].line,
                           seen->section[s].col);
  seen->section[s] = cfg->section_loc[s] = nd__reader_loc(r, r->ev.start_mark);
  if ((rc = nd__reader_next(r)) < 0) return rc;
  if (nd__reader_at_null(r)) return 0; /* "model:" alone: nothing to change */
  if (r->ev.type != YAML_MAPPING_START_EVENT)
    return nd__reader_fail(r, r->ev.start_mark, "section '%s' must be a mapping of keys, got %s", shown,
                           shape(r, got, sizeof got));
  for (;;) {
    if ((rc = nd__reader_next(r)) < 0) return rc;
    if (r->ev.type == YAML_MAPPING_END_EVENT) return 0;
    if (r->ev.type != YAML_SCALAR_EVENT)
      return nd__reader_fail(r, r->ev.start_mark, "keys of section '%s' must be names, got %s", shown,
                             shape(r, got, sizeof got));
    if ((rc = read_key(r, cfg, seen, s)) < 0) return rc;
  }
}

static int read_document(struct nd__reader *r, nd_config *cfg) {
  struct seen seen;
  char got[256];
  int rc;
  memset(&seen, 0, sizeof seen);
  if ((rc = nd__reader_next(r)) < 0) return rc;
  if (nd__reader_at_null(r)) return nd__reader_next(r); /* "---" alone: all defaults */
  if (r->ev.type != YAML_MAPPING_START_EVENT)
    return nd__reader_fail(r, r->ev.start_mark, "the top level must be a mapping of sections, got %s",
                           shape(r, got, sizeof got));
  for (;;) {
    if ((rc = nd__reader_next(r)) < 0) return rc;
    if (r->ev.type == YAML_MAPPING_END_EVENT) break;
    if (r->ev.type != YAML_SCALAR_EVENT)
      return nd__reader_fail(r, r->ev.start_mark, "section names must be names, got %s", shape(r, got, sizeof got));
    if ((rc = read_section(r, cfg, &seen)) < 0) return rc;
  }
  return nd__reader_next(r); /* the document end */
}

static int read_stream(struct nd__reader *r, nd_config *cfg) {
  int rc;
  if ((rc = nd__reader_next(r)) < 0) return rc; /* stream start */
  if ((rc = nd__reader_next(r)) < 0) return rc;
  if (r->ev.type == YAML_STREAM_END_EVENT) return 0; /* empty, or comments only */
  if ((rc = read_document(r, cfg)) < 0) return rc;
  if ((rc = nd__reader_next(r)) < 0) return rc;
  if (r->ev.type != YAML_STREAM_END_EVENT)
    return nd__reader_fail(r, r->ev.start_mark, "expected a single YAML document");
  return 0;
}

/* Positions from an earlier file would be printed with this file's name. */
static void forget_file_locations(nd_config *cfg) {
  for (size_t i = 0; i < sizeof cfg->loc / sizeof cfg->loc[0]; i++)
    if (!cfg->loc[i].from_set) memset(&cfg->loc[i], 0, sizeof cfg->loc[i]);
  for (size_t i = 0; i < ND_MAX_SECTIONS; i++)
    if (!cfg->section_loc[i].from_set) memset(&cfg->section_loc[i], 0, sizeof cfg->section_loc[i]);
}

int nd_config_load_string(nd_config *cfg, const char *name, const char *yaml, size_t len, nd_error *err) {
  struct nd__reader r;
  nd_config *tmp = NULL;
  int rc, opened = 0;
  if (!name) name = "<string>";
  if (!cfg || (!yaml && len)) return nd__fail(err, ND_EINVAL, "%s: error: no configuration", name);
  if (len > ND__CONFIG_MAX_BYTES)
    return nd__config_error(err, name, 1, 1, "file is larger than %d bytes (1 MiB)", ND__CONFIG_MAX_BYTES);
  tmp = malloc(sizeof *tmp);
  if (!tmp) {
    rc = nd__fail(err, ND_ENOMEM, "%s: error: out of memory", name);
    goto cleanup;
  }
  memcpy(tmp, cfg, sizeof *tmp);
  forget_file_locations(tmp);
  snprintf(tmp->source, sizeof tmp->source, "%s", name);
  if ((rc = nd__reader_open(&r, name, yaml ? yaml : "", len, 0, err)) < 0) goto cleanup;
  opened = 1;
  if ((rc = read_stream(&r, tmp)) < 0) goto cleanup;
  nd__config_note_origin(tmp);
  memcpy(cfg, tmp, sizeof *cfg);
cleanup:
  if (opened) nd__reader_close(&r);
  free(tmp);
  return rc;
}

int nd_config_load_file(nd_config *cfg, const char *path, nd_error *err) {
  if (!cfg || !path) return nd__fail(err, ND_EINVAL, "error: no configuration file");
  if (!*path) return nd__fail(err, ND_EIO, "error: the configuration file's name is empty");
  char *buf = NULL;
  size_t len = 0;
  int rc = nd__read_file(path, ND__CONFIG_MAX_BYTES, &buf, &len);
  if (rc == ND_EIO) return nd__fail(err, ND_EIO, "%s: error: cannot open: %s", path, strerror(errno));
  if (rc == ND_EDATA) return nd__fail(err, ND_EIO, "%s: error: cannot read: not a regular file", path);
  if (rc == ND_EINVAL)
    return nd__config_error(err, path, 1, 1, "file is larger than %d bytes (1 MiB)", ND__CONFIG_MAX_BYTES);
  if (rc) return nd__fail(err, rc, "%s: error: out of memory", path);
  rc = nd_config_load_string(cfg, path, buf, len, err);
  free(buf);
  return rc;
}
