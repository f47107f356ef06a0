/* Cluster files: a YAML mapping of a few fields and sections of numbers
 * (docs/clusters.md). Every hardware field is required, each once, and
 * checked against its range: a cluster that silently lost a field would
 * plan for a machine nobody has. The `software:` section's fields are
 * optional: each says what a run does beyond ndgraph's own graph, off when
 * absent. */
#include "sim/cluster.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/file.h"

#define ND__CLUSTER_MAX_BYTES (1 << 20)

enum field_type { TEXT, COUNT, NUMBER, FRACTION, CHOICE };

typedef struct field {
  const char *section, *key; /* section NULL: a top-level field */
  enum field_type type;
  size_t offset;       /* into nd_cluster */
  double scale;        /* the file's unit to the struct's */
  double max;          /* COUNT and NUMBER: the largest accepted; TEXT and CHOICE: the member's size */
  int optional;        /* may be absent (off) and may be 0 */
  const char *choices; /* CHOICE: the accepted words, "a|b", the first the default */
} field;

#define F(sec, key, type, member, scale, max) {sec, key, type, offsetof(nd_cluster, member), scale, max, 0, NULL}
#define TEXT_OF(sec, key, member) \
  {sec, key, TEXT, offsetof(nd_cluster, member), 0, sizeof((nd_cluster *)0)->member, 0, NULL}
static const field fields[] = {
    TEXT_OF(NULL, "name", name),
    F(NULL, "nodes", COUNT, nodes, 1, 1e6),
    F(NULL, "gpus_per_node", COUNT, gpus_per_node, 1, 64),
    TEXT_OF("gpu", "name", gpu),
    F("gpu", "peak_tflops_fp32", NUMBER, peak_fp32, 1e12, 1e6),
    F("gpu", "peak_tflops_tf32", NUMBER, peak_tf32, 1e12, 1e6),
    F("gpu", "peak_tflops_bf16", NUMBER, peak_bf16, 1e12, 1e6),
    F("gpu", "peak_tflops_fp16", NUMBER, peak_fp16, 1e12, 1e6),
    F("gpu", "hbm_gbs", NUMBER, hbm_bps, 1e9, 1e6),
    F("gpu", "hbm_gib", NUMBER, hbm_bytes, 1024.0 * 1024 * 1024, 1e6),
    F("gpu", "launch_us", NUMBER, launch_s, 1e-6, 1e6),
    F("efficiency", "gemm_max", FRACTION, gemm_max, 1, 1),
    F("efficiency", "gemm_half_gflop", NUMBER, gemm_half_flops, 1e9, 1e9),
    F("efficiency", "memory", FRACTION, memory, 1, 1),
    F("efficiency", "vector", FRACTION, vector, 1, 1),
    F("intra_node", "gbs", NUMBER, intra_bps, 1e9, 1e6),
    F("intra_node", "latency_us", NUMBER, intra_latency_s, 1e-6, 1e6),
    F("inter_node", "gbs", NUMBER, inter_bps, 1e9, 1e6),
    F("inter_node", "latency_us", NUMBER, inter_latency_s, 1e-6, 1e6),
    {"software", "attention", CHOICE, offsetof(nd_cluster, attention), 0, sizeof((nd_cluster *)0)->attention, 1,
     "fused|unfused"},
    {"software", "dropout", NUMBER, offsetof(nd_cluster, dropout), 1, 0.99, 1, NULL},
    {"software", "grad_allreduce_bytes", NUMBER, offsetof(nd_cluster, grad_bytes), 1, 8, 1, NULL},
};
#undef F
#undef TEXT_OF
#define N_FIELDS (int)(sizeof fields / sizeof fields[0])

typedef struct parse {
  yaml_parser_t parser;
  yaml_event_t ev;
  int has_ev;
  const char *path;
  nd_error *err;
  nd_cluster *c;
  int seen[N_FIELDS];
} parse;

static int fail(parse *p, const char *fmt, const char *a, const char *b) {
  char what[256];
  snprintf(what, sizeof what, fmt, a, b);
  int line = p->has_ev ? (int)p->ev.start_mark.line + 1 : 0;
  if (line) return nd__fail(p->err, ND_ECONFIG, "%s:%d: %s", p->path, line, what);
  return nd__fail(p->err, ND_ECONFIG, "%s: %s", p->path, what);
}

static int next(parse *p) {
  if (p->has_ev) yaml_event_delete(&p->ev);
  p->has_ev = 0;
  if (!yaml_parser_parse(&p->parser, &p->ev))
    return nd__fail(p->err, ND_ECONFIG, "%s:%d: not YAML: %s", p->path, (int)p->parser.problem_mark.line + 1,
                    p->parser.problem ? p->parser.problem : "syntax error");
  p->has_ev = 1;
  return 0;
}

static const char *scalar(const parse *p) { return (const char *)p->ev.data.scalar.value; }

/* The current event is field f's value. */
static int set_field(parse *p, int i, const char *name) {
  const field *f = &fields[i];
  if (p->ev.type != YAML_SCALAR_EVENT)
    return fail(p, "%s must be %s", name, f->type == TEXT ? "text" : f->type == CHOICE ? "a word" : "a number");
  if (p->seen[i]++) return fail(p, "%s is given twice%s", name, "");
  char *at = (char *)p->c + f->offset;
  const char *v = scalar(p);
  if (f->type == CHOICE) {
    size_t n = strlen(v);
    const char *c = strstr(f->choices, v);
    if (!n || !c || strchr(v, '|') || (c > f->choices && c[-1] != '|') || (c[n] && c[n] != '|'))
      return fail(p, "%s must be one of %s", name, f->choices);
    memcpy(at, v, n + 1);
    return 0;
  }
  if (f->type == TEXT) {
    size_t size = (size_t)f->max;
    char most[24];
    snprintf(most, sizeof most, "%zu", size - 1);
    for (const char *s = v; *s; s++)
      if ((unsigned char)*s < 32) return fail(p, "%s holds a control character%s", name, "");
    if (!v[0] || strlen(v) >= size) return fail(p, "%s must be text of 1 to %s characters", name, most);
    memcpy(at, v, strlen(v) + 1);
    return 0;
  }
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  /* a zero peak, bandwidth or memory would price work at nothing or forever; latencies may be 0 */
  int may_be_zero = f->optional || strstr(f->key, "latency") || strstr(f->key, "launch");
  int ok = v[0] && !*end && !errno && isfinite(x);
  char range[64];
  if (f->type == COUNT) {
    ok = ok && x >= 1 && x <= f->max && x == floor(x);
    snprintf(range, sizeof range, "a whole number from 1 to %.0f", f->max);
  } else if (f->type == FRACTION) {
    ok = ok && x > 0 && x <= 1;
    snprintf(range, sizeof range, "a fraction above 0, at most 1");
  } else {
    ok = ok && (may_be_zero ? x >= 0 : x > 0) && x <= f->max;
    snprintf(range, sizeof range, "a %s number at most %g", may_be_zero ? "non-negative" : "positive", f->max);
  }
  if (!ok) return fail(p, "%s must be %s", name, range);
  if (f->type == COUNT)
    *(int *)at = (int)x;
  else if (f->offset == offsetof(nd_cluster, hbm_bytes))
    *(int64_t *)at = (int64_t)(x * f->scale);
  else
    *(double *)at = x * f->scale;
  return 0;
}

static int find(const char *section, const char *key) {
  for (int i = 0; i < N_FIELDS; i++)
    if (!section == !fields[i].section && (!section || !strcmp(section, fields[i].section)) && !strcmp(key, fields[i].key))
      return i;
  return -1;
}

static int is_section(const char *key) {
  for (int i = 0; i < N_FIELDS; i++)
    if (fields[i].section && !strcmp(fields[i].section, key)) return 1;
  return 0;
}

/* The mapping of a section, its MAPPING_START current. */
static int read_section(parse *p, const char *section) {
  int rc;
  while (!(rc = next(p)) && p->ev.type == YAML_SCALAR_EVENT) {
    char key[64], name[160];
    snprintf(key, sizeof key, "%s", scalar(p));
    snprintf(name, sizeof name, "%s.%s", section, key);
    int i = find(section, key);
    if (i < 0) return fail(p, "%s: unknown field (see docs/clusters.md)%s", name, "");
    if ((rc = next(p)) || (rc = set_field(p, i, name))) return rc;
  }
  if (!rc && p->ev.type != YAML_MAPPING_END_EVENT) return fail(p, "%s: expected field: value lines%s", section, "");
  return rc;
}

static int read_top(parse *p) {
  int rc = next(p);
  if (!rc && p->ev.type == YAML_STREAM_START_EVENT) rc = next(p);
  if (!rc && p->ev.type == YAML_DOCUMENT_START_EVENT) rc = next(p);
  if (!rc && p->ev.type != YAML_MAPPING_START_EVENT) return fail(p, "not a cluster description: expected a mapping of fields%s%s", "", "");
  while (!rc && !(rc = next(p)) && p->ev.type == YAML_SCALAR_EVENT) {
    char key[64];
    snprintf(key, sizeof key, "%s", scalar(p));
    int i = find(NULL, key);
    if ((rc = next(p))) break;
    if (i >= 0)
      rc = set_field(p, i, key);
    else if (is_section(key) && p->ev.type == YAML_MAPPING_START_EVENT)
      rc = read_section(p, key);
    else if (is_section(key))
      rc = fail(p, "%s must be a mapping of fields%s", key, "");
    else
      rc = fail(p, "%s: unknown field (see docs/clusters.md)%s", key, "");
  }
  if (!rc && p->ev.type != YAML_MAPPING_END_EVENT) rc = fail(p, "expected field: value lines%s%s", "", "");
  if (!rc && !(rc = next(p)) && p->ev.type == YAML_DOCUMENT_END_EVENT) rc = next(p);
  if (!rc && p->ev.type != YAML_STREAM_END_EVENT) rc = fail(p, "more than one document%s%s", "", "");
  return rc;
}

int nd_cluster_load(nd_cluster *c, const char *path, nd_error *err) {
  memset(c, 0, sizeof *c);
  char *text = NULL;
  size_t len = 0;
  int rc = nd__read_file(path, ND__CLUSTER_MAX_BYTES, &text, &len);
  if (rc == ND_EIO) return nd__fail(err, ND_ECONFIG, "%s: %s", path, strerror(errno));
  if (rc == ND_EDATA) return nd__fail(err, ND_ECONFIG, "%s: not a regular file", path);
  if (rc == ND_EINVAL) return nd__fail(err, ND_ECONFIG, "%s: larger than 1 MiB: not a cluster file", path);
  if (rc) return nd__fail(err, rc, "%s: out of memory", path);
  parse p = {.path = path, .err = err, .c = c};
  if (!yaml_parser_initialize(&p.parser)) {
    free(text);
    return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  }
  yaml_parser_set_input_string(&p.parser, (const unsigned char *)text, len);
  rc = read_top(&p);
  if (p.has_ev) yaml_event_delete(&p.ev);
  p.has_ev = 0;
  yaml_parser_delete(&p.parser);
  free(text);
  for (int i = 0; i < N_FIELDS && !rc; i++)
    if (!p.seen[i] && fields[i].type == CHOICE) /* absent: the first choice */
      snprintf((char *)c + fields[i].offset, (size_t)fields[i].max, "%.*s", (int)strcspn(fields[i].choices, "|"),
               fields[i].choices);
    else if (!p.seen[i] && !fields[i].optional) {
      char name[160];
      snprintf(name, sizeof name, "%s%s%s", fields[i].section ? fields[i].section : "", fields[i].section ? "." : "",
               fields[i].key);
      rc = fail(&p, "%s is missing%s", name, "");
    }
  return rc;
}
