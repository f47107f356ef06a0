/* Creating, reading and writing out configurations; values go through the key
 * table so that defaults, get and dump agree with what loading accepts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "configs/keys.h"

int nd_config_new(nd_config **out) {
  char why[ND_ERROR_MAX];
  if (!out) return ND_EINVAL;
  *out = NULL;
  nd_config *cfg = calloc(1, sizeof *cfg);
  if (!cfg) return ND_ENOMEM;
  /* Defaults are spelled as text in the table and parsed like --set, so the
   * embedded quick-start obeys the same ranges as any file. */
  for (size_t i = 0; i < nd__n_keys; i++) {
    const struct nd__key *k = &nd__keys[i];
    if (!k->def) {
      nd__key_clear(cfg, k);
    } else if (nd__key_set_scalar(cfg, k, k->def, strlen(k->def), why, sizeof why) < 0) {
      free(cfg);
      return ND_EINVAL;
    }
  }
  *out = cfg;
  return 0;
}

void nd_config_free(nd_config *cfg) { free(cfg); }

nd_loc nd__config_loc(const nd_config *cfg, const char *key) {
  nd_loc none = {0, 0, 0};
  int i = key ? nd__key_find_dotted(key, strlen(key)) : -1;
  return cfg && i >= 0 ? cfg->loc[i] : none;
}

static const char *base_origin(const nd_config *cfg) { return cfg->source[0] ? cfg->source : "the built-in defaults"; }

void nd__config_note_origin(nd_config *cfg) {
  snprintf(cfg->origin, sizeof cfg->origin, "%s%s", base_origin(cfg), cfg->from_set ? " and --set" : "");
}

const char *nd__config_origin(const nd_config *cfg, const char *key) {
  if (!key) return cfg->origin[0] ? cfg->origin : base_origin(cfg);
  nd_loc at = nd__config_loc(cfg, key);
  if (at.line <= 0) return at.from_set ? "--set" : base_origin(cfg);
  /* a few at once: one message may name two keys */
  static _Thread_local char text[4][ND_PATH_MAX + 48];
  static _Thread_local unsigned next;
  char *t = text[next++ % 4];
  snprintf(t, sizeof text[0], "%s:%d:%d: error", at.from_set ? "--set" : base_origin(cfg), at.line, at.col);
  return t;
}

int nd_config_get(const nd_config *cfg, const char *key, char *buf, size_t size) {
  struct nd__sb sb = {0};
  int rc = 0;
  int i = cfg && key ? nd__key_find_dotted(key, strlen(key)) : -1;
  if (i < 0 || !buf || size == 0) return ND_EINVAL;
  nd__key_format(cfg, &nd__keys[i], 0, &sb);
  if (sb.oom) {
    rc = ND_ENOMEM;
    goto cleanup;
  }
  if (sb.len >= size) {
    rc = ND_EINVAL;
    goto cleanup;
  }
  memcpy(buf, sb.buf ? sb.buf : "", sb.len + 1);
cleanup:
  if (rc < 0) buf[0] = '\0';
  nd__sb_free(&sb);
  return rc;
}

int nd_config_dump(const nd_config *cfg, char **yaml_out, size_t *len_out) {
  struct nd__sb sb = {0};
  if (!cfg || !yaml_out) return ND_EINVAL;
  *yaml_out = NULL;
  if (len_out) *len_out = 0;
  nd__sb_printf(&sb, "# ndgraph configuration: every key, defaults included\n");
  for (size_t s = 0; s < nd__n_sections; s++) {
    nd__sb_printf(&sb, "%s:\n", nd__sections[s]);
    for (size_t i = 0; i < nd__n_keys; i++) {
      if (strcmp(nd__keys[i].section, nd__sections[s]) != 0) continue;
      nd__sb_printf(&sb, "  %s: ", nd__keys[i].name);
      nd__key_format(cfg, &nd__keys[i], 1, &sb);
      nd__sb_add(&sb, "\n", 1);
    }
  }
  if (sb.oom) {
    nd__sb_free(&sb);
    return ND_ENOMEM;
  }
  *yaml_out = sb.buf;
  if (len_out) *len_out = sb.len;
  return 0;
}

int64_t nd_config_n_kv_head(const nd_config *cfg) {
  return cfg->model.n_kv_head ? cfg->model.n_kv_head : cfg->model.n_head;
}

enum nd_precision nd_config_precision(const nd_config *cfg) {
  return cfg->runtime.tf32 ? ND_PRECISION_TF32 : cfg->train.precision;
}

int64_t nd_config_intermediate_size(const nd_config *cfg) {
  if (cfg->model.intermediate_size) return cfg->model.intermediate_size;
  int64_t hidden = 2 * (4 * cfg->model.n_embd) / 3;
  return (hidden + 255) / 256 * 256;
}
