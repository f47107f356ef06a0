/* --set: one key from command-line text. Positions are columns of the
 * assignment ("--set:1:COL"), remembered so cross-key errors can point back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "configs/reader.h"

#define SET_FILE "--set"

static int unknown_key(const char *key, size_t len, nd_error *err) {
  char shown[200], best[160];
  const char *dot = memchr(key, '.', len);
  size_t slen = dot ? (size_t)(dot - key) : 0;
  const char *name = dot ? dot + 1 : key;
  size_t nlen = dot ? len - slen - 1 : len;
  nd__show(shown, sizeof shown, key, len);
  nd__suggest_key(key, slen, name, nlen, best, sizeof best);
  if (best[0]) return nd__config_error(err, SET_FILE, 1, 1, "unknown key '%s'; did you mean '%s'?", shown, best);
  return nd__config_error(err, SET_FILE, 1, 1, "unknown key '%s'", shown);
}

/* Lists and mappings are YAML flow text: "[2, 2]", "{matmul: blas}". */
static int set_composite(nd_config *cfg, const struct nd__key *k, const char *value, int col, nd_error *err) {
  struct nd__reader r;
  int rc = nd__reader_open(&r, SET_FILE, value, strlen(value), col, err);
  if (rc < 0) return rc;
  if ((rc = nd__reader_next(&r)) < 0) goto cleanup; /* stream start */
  if ((rc = nd__reader_next(&r)) < 0) goto cleanup;
  if (r.ev.type == YAML_STREAM_END_EVENT) { /* nothing after '=': empty */
    nd__key_clear(cfg, k);
    goto cleanup;
  }
  if ((rc = nd__reader_next(&r)) < 0) goto cleanup; /* past the document start */
  if ((rc = nd__reader_value(&r, cfg, k)) < 0) goto cleanup;
  if ((rc = nd__reader_next(&r)) < 0) goto cleanup; /* document end */
  if ((rc = nd__reader_next(&r)) < 0) goto cleanup;
  if (r.ev.type != YAML_STREAM_END_EVENT) rc = nd__reader_fail(&r, r.ev.start_mark, "expected a single value");
cleanup:
  nd__reader_close(&r);
  return rc;
}

#define OVERRIDE_PREFIX "kernels.override."

/* --set kernels.override.KIND=NAME: one entry of the mapping, added or replaced. */
static int set_override(nd_config *cfg, const char *kind, size_t kind_len, const char *name, int value_col,
                        nd_error *err) {
  int i = nd__key_find_dotted("kernels.override", strlen("kernels.override"));
  size_t name_len = strlen(name);
  if (!kind_len || kind_len >= ND_NAME_MAX)
    return nd__config_error(err, SET_FILE, 1, (int)strlen(OVERRIDE_PREFIX) + 1,
                            "kernels.override: a kind of 1 to %d bytes is expected", ND_NAME_MAX - 1);
  if (!name_len || name_len >= ND_NAME_MAX)
    return nd__config_error(err, SET_FILE, 1, value_col, "kernels.override.%.*s: a name of 1 to %d bytes is expected",
                            (int)kind_len, kind, ND_NAME_MAX - 1);
  int64_t at = 0;
  while (at < cfg->kernels.n_overrides && (strlen(cfg->kernels.overrides[at].kind) != kind_len ||
                                           strncmp(cfg->kernels.overrides[at].kind, kind, kind_len) != 0))
    at++;
  if (at == ND_MAX_OVERRIDES)
    return nd__config_error(err, SET_FILE, 1, value_col, "kernels.override: too many entries, at most %d",
                            ND_MAX_OVERRIDES);
  struct nd_kernel_override *o = &cfg->kernels.overrides[at];
  snprintf(o->kind, sizeof o->kind, "%.*s", (int)kind_len, kind);
  snprintf(o->name, sizeof o->name, "%s", name);
  if (at == cfg->kernels.n_overrides) cfg->kernels.n_overrides++;
  if (i >= 0) cfg->loc[i] = (nd_loc){1, value_col, 1};
  return 0;
}

static int set_at(nd_config *cfg, const char *key, size_t klen, const char *value, int value_col, nd_error *err) {
  char why[ND_ERROR_MAX];
  nd_config *tmp = NULL;
  int rc = 0;
  size_t plen = strlen(OVERRIDE_PREFIX);
  if (klen > plen && strncmp(key, OVERRIDE_PREFIX, plen) == 0)
    return set_override(cfg, key + plen, klen - plen, value, value_col, err);
  int i = nd__key_find_dotted(key, klen);
  if (i < 0) return unknown_key(key, klen, err);
  const struct nd__key *k = &nd__keys[i];
  /* A copy keeps cfg unchanged when the value is refused. */
  tmp = malloc(sizeof *tmp);
  if (!tmp) return nd__fail(err, ND_ENOMEM, SET_FILE ": error: out of memory");
  memcpy(tmp, cfg, sizeof *tmp);
  if (nd__key_is_composite(k)) {
    if ((rc = set_composite(tmp, k, value, value_col, err)) < 0) goto cleanup;
  } else if (nd__key_set_scalar(tmp, k, value, strlen(value), why, sizeof why) < 0) {
    rc = nd__config_error(err, SET_FILE, 1, value_col, "%s", why);
    goto cleanup;
  }
  tmp->loc[i] = (nd_loc){1, value_col, 1};
  memcpy(cfg, tmp, sizeof *cfg);
cleanup:
  free(tmp);
  return rc;
}

/* A value taken from --set: the configuration's origin says so. */
static int noted(nd_config *cfg, int rc) {
  if (rc == 0) {
    cfg->from_set = 1;
    nd__config_note_origin(cfg);
  }
  return rc;
}

int nd_config_set(nd_config *cfg, const char *key, const char *value, nd_error *err) {
  if (!cfg || !key || !value) return nd__fail(err, ND_EINVAL, SET_FILE ": error: no key or value");
  /* Columns as if written "key=value". */
  return noted(cfg, set_at(cfg, key, strlen(key), value, (int)strlen(key) + 2, err));
}

int nd_config_set_assignment(nd_config *cfg, const char *assignment, nd_error *err) {
  if (!cfg || !assignment) return nd__fail(err, ND_EINVAL, SET_FILE ": error: no assignment");
  const char *eq = strchr(assignment, '=');
  if (!eq) {
    char shown[200];
    nd__show(shown, sizeof shown, assignment, strlen(assignment));
    return nd__config_error(err, SET_FILE, 1, 1, "expected section.key=value, got '%s'", shown);
  }
  size_t klen = (size_t)(eq - assignment);
  return noted(cfg, set_at(cfg, assignment, klen, eq + 1, (int)klen + 2, err));
}
