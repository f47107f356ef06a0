/* Reading one metrics file. Lines are short (about 200 bytes); one longer
 * than LINE_MAX is refused rather than read whole, so that a file that is
 * not a metrics file cannot take the memory. */
#include "metrics/series.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define LINE_MAX_BYTES 65536

const nd_metric_info nd__metric_info[ND_METRIC_COUNT] = {
    [ND_METRIC_LOSS] = {"loss", "training loss", 0, 0},
    [ND_METRIC_VAL_LOSS] = {"val_loss", "validation loss", 0, 1},
    [ND_METRIC_LR] = {"lr", "learning rate", 1, 0},
    [ND_METRIC_TOKENS_PER_S] = {"tokens_per_s", "tokens/s", 2, 0},
};

/* Points as they come, before sorting: the line order breaks ties. */
typedef struct raw_points {
  double *step, *value;
  int64_t n, cap;
} raw_points;

static int append(raw_points *p, double step, double value) {
  if (p->n == p->cap) {
    int64_t cap = p->cap ? 2 * p->cap : 256;
    double *s = realloc(p->step, (size_t)cap * sizeof *s);
    if (!s) return -1;
    p->step = s;
    double *v = realloc(p->value, (size_t)cap * sizeof *v);
    if (!v) return -1;
    p->value = v, p->cap = cap;
  }
  p->step[p->n] = step, p->value[p->n] = value, p->n++;
  return 0;
}

/* The next line of f into buf, without its newline: its length; -1 at the
 * end of the file; -2 when it does not fit; -3 when it holds a NUL byte. */
static long next_line(FILE *f, char *buf, size_t size) {
  size_t n = 0;
  int c, nul = 0;
  while ((c = getc_unlocked(f)) != EOF && c != '\n') {
    if (n + 1 >= size) return -2;
    nul |= c == 0;
    buf[n++] = (char)c;
  }
  if (c == EOF && n == 0) return -1;
  buf[n] = 0;
  return nul ? -3 : (long)n;
}

static int blank(const char *s) {
  return s[strspn(s, " \t\r")] == 0;
}

static const raw_points *sort_raw;
/* by step, then by line */
static int by_step(const void *a, const void *b) {
  int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
  double x = sort_raw->step[i], y = sort_raw->step[j];
  return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

/* raw into out in step order, a step given twice keeping its later value */
static int settle(nd_points *out, const raw_points *raw) {
  if (raw->n == 0) return 0;
  int64_t *order = malloc((size_t)raw->n * sizeof *order);
  out->step = malloc((size_t)raw->n * sizeof *out->step);
  out->value = malloc((size_t)raw->n * sizeof *out->value);
  if (!order || !out->step || !out->value) {
    free(order);
    return -1;
  }
  for (int64_t i = 0; i < raw->n; i++) order[i] = i;
  sort_raw = raw;
  qsort(order, (size_t)raw->n, sizeof *order, by_step);
  for (int64_t k = 0; k < raw->n; k++) {
    int64_t i = order[k];
    if (out->n && out->step[out->n - 1] == raw->step[i]) out->n--;
    out->step[out->n] = raw->step[i], out->value[out->n] = raw->value[i], out->n++;
  }
  free(order);
  return 0;
}

int nd__metrics_run_read(nd_metrics_run *run, const char *path, nd_error *err) {
  memset(run, 0, sizeof *run);
  raw_points raw[ND_METRIC_COUNT] = {0};
  char *line = malloc(LINE_MAX_BYTES);
  FILE *f = NULL;
  int rc = 0;
  long long number = 0, lines = 0;
  if (!line || !(run->name = strdup(path))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory reading the metrics", path);
    goto done;
  }
  if (!(f = fopen(path, "r"))) {
    rc = nd__fail(err, ND_EIO, "%s: cannot open the metrics file: %s", path, strerror(errno));
    goto done;
  }
  for (;;) {
    long len = next_line(f, line, LINE_MAX_BYTES);
    number++;
    if (len == -1) break;
    if (len == -2) {
      rc = nd__fail(err, ND_EDATA, "%s:%lld: line longer than %d bytes: not a metrics file", path, number,
                    LINE_MAX_BYTES);
      goto done;
    }
    if (len == -3) {
      rc = nd__fail(err, ND_EDATA, "%s:%lld: a NUL byte: not a metrics file", path, number);
      goto done;
    }
    if (blank(line)) continue;
    cJSON *obj = cJSON_ParseWithLength(line, (size_t)len);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(obj, "step");
    if (!cJSON_IsObject(obj)) {
      rc = nd__fail(err, ND_EDATA, "%s:%lld: not a JSON object", path, number);
    } else if (!cJSON_IsNumber(step) || !isfinite(step->valuedouble)) {
      rc = nd__fail(err, ND_EDATA, "%s:%lld: no \"step\" number", path, number);
    }
    for (int m = 0; !rc && m < ND_METRIC_COUNT; m++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, nd__metric_info[m].key);
      if (!v) continue;
      if (!cJSON_IsNumber(v))
        rc = nd__fail(err, ND_EDATA, "%s:%lld: \"%s\" is not a number", path, number, nd__metric_info[m].key);
      else if (!isfinite(v->valuedouble))
        run->left_out++;
      else if (append(&raw[m], step->valuedouble, v->valuedouble))
        rc = nd__fail(err, ND_ENOMEM, "%s: out of memory reading the metrics", path);
    }
    cJSON_Delete(obj);
    if (rc) goto done;
    lines++;
  }
  if (ferror(f)) {
    rc = nd__fail(err, ND_EIO, "%s: cannot read the metrics file: %s", path, strerror(errno));
    goto done;
  }
  if (lines == 0) {
    rc = nd__fail(err, ND_EDATA, "%s: no metrics: the file has no line", path);
    goto done;
  }
  for (int m = 0; m < ND_METRIC_COUNT; m++)
    if (settle(&run->series[m], &raw[m])) {
      rc = nd__fail(err, ND_ENOMEM, "%s: out of memory reading the metrics", path);
      goto done;
    }
done:
  for (int m = 0; m < ND_METRIC_COUNT; m++) free(raw[m].step), free(raw[m].value);
  if (f) fclose(f);
  free(line);
  if (rc) nd__metrics_run_free(run);
  return rc;
}

void nd__metrics_run_free(nd_metrics_run *run) {
  for (int m = 0; m < ND_METRIC_COUNT; m++) free(run->series[m].step), free(run->series[m].value);
  free(run->name);
  memset(run, 0, sizeof *run);
}
