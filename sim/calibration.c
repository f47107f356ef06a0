/* Reading and writing calibration files (JSON, docs/planner.md):
 *   {"format": "ndgraph-calibration/1", "machine": "...",
 *    "devices": {"cpu": {"memory_bytes": N, "gap_us": G, "wake_us": W, "slowdown_beside_opencl": F,
 *                        "slowdown_shared": H},
 *                "opencl": {...}},
 *    "bus": {"host_device_gbs": X, "device_device_gbs": Y, "latency_us": L},
 *    "step_overhead_us": S,
 *    "kinds": {"matmul_fwd": {"cpu": {"overhead_us": A, "gflops": R, "gbs": M}, ...}, ...}}
 * A task of that kind takes A + FLOPs / R + bytes / M on one device of that
 * kind (a rate of 0 or absent: the term is not counted); a kind without an
 * entry for a device kind does not run there. */
#include "sim/calibration.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/device.h"
#include "common/file.h"
#include "configs/text.h"
#include "graph/priority.h"

#define ND_CALIBRATION_FORMAT "ndgraph-calibration/1"


static void fit_from_cost(nd_sim_fit *f, const nd_cost_model *c) {
  *f = (nd_sim_fit){1, c->overhead_s, 1 / c->flops_per_s, 1 / c->bytes_per_s};
}

void nd_calibration_default(nd_calibration *c) {
  /* the kinds the OpenCL backend declines (its nd_backend_ops.declined; `ndgraph calibrate` measures which), and the
   * all-reduce; tests/test_shared_placement fails where a task runs elsewhere than the simulator puts it, and
   * tests/test_kinds where this list and the backend's table differ (sim/ sees no kernels/, and that table is
   * compiled only with OpenCL, while these estimates model an OpenCL device in every build) */
  static const enum nd_task_kind host_only[] = {
      ND_TASK_LOAD_BATCH,     ND_TASK_CE_COMBINE,       ND_TASK_ALLREDUCE,      ND_TASK_GRAD_SUMSQ,
      ND_TASK_ALLGATHER,      ND_TASK_SHARD_GATHER,     ND_TASK_REDUCE_SCATTER, ND_TASK_GRAD_SUMSQ_RANGE,
      ND_TASK_PARAM_GATHER,   ND_TASK_CAST_BF16,        ND_TASK_RING_ATTN_FWD,  ND_TASK_RING_ATTN_MERGE,
      ND_TASK_RING_ATTN_BWD,  ND_TASK_RING_KV_ADD,      ND_TASK_RING_POS_FWD,   ND_TASK_RING_POS_BWD,
      ND_TASK_RING_GQA_FWD,   ND_TASK_RING_GQA_BWD,     ND_TASK_RING_GQA_KV_ADD, ND_TASK_RING_ROPE_FWD,
      ND_TASK_RING_ROPE_BWD};
  memset(c, 0, sizeof *c);
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    fit_from_cost(&c->model.fit[k][ND_BACKEND_CPU], &nd_cost_cpu);
    fit_from_cost(&c->model.fit[k][ND_BACKEND_OPENCL], &nd_cost_opencl);
  }
  for (size_t i = 0; i < sizeof host_only / sizeof host_only[0]; i++)
    c->model.fit[host_only[i]][ND_BACKEND_OPENCL].valid = 0;
  c->host_device_bps = 11e9; /* StarPU's bus calibration on this kind of machine (docs/opencl.md) */
  c->latency_s = 10e-6;
  snprintf(c->machine, sizeof c->machine, "built-in estimates (no calibration file)");
}

/* Whether obj has more than one member of that name: JSON's parsers keep
 * the first or the last, and either way one of the two is silently lost. */
static int twice(const cJSON *obj, const char *name) {
  int n = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, obj) n += it->string && strcmp(it->string, name) == 0;
  return n > 1;
}

/* A number member from 0 to max, or *ok = 0 with the message (JSON's 1e999
 * parses as infinity, which no duration model can use; an hour of overhead
 * per task is no machine's either). */
static double number(const cJSON *obj, const char *name, double max, const char *where, char *why, size_t size,
                     int *ok) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!v) return 0;
  if (twice(obj, name)) {
    if (*ok) snprintf(why, size, "%s.%s is given twice", where, name);
    *ok = 0;
    return 0;
  }
  int non_negative = cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0;
  if (!non_negative || v->valuedouble > max) {
    if (*ok && !non_negative) snprintf(why, size, "%s.%s must be a non-negative number", where, name);
    if (*ok && non_negative) snprintf(why, size, "%s.%s must be at most %g", where, name, max);
    *ok = 0;
    return 0;
  }
  return v->valuedouble;
}

/* the bounds of number(): durations in microseconds, rates, sizes in bytes */
#define MAX_US    3.6e9 /* an hour */
#define MAX_RATE  1e9   /* GB/s or GFLOP/s: an exa-scale device */
#define MAX_BYTES 1e18

/* a calibration file is a few hundred kinds of a few numbers: far below this */
#define ND__CALIBRATION_MAX_BYTES ((size_t)64 << 20)

static int bad(nd_error *err, const char *path, const char *why) {
  return nd__fail(err, ND_ECONFIG, "%s: %s", path, why);
}

int nd_calibration_load(nd_calibration *c, const char *path, nd_error *err) {
  memset(c, 0, sizeof *c);
  char *text = NULL;
  size_t len = 0;
  int rc = nd__read_file(path, ND__CALIBRATION_MAX_BYTES, &text, &len);
  if (rc == ND_EIO) return nd__fail(err, ND_ECONFIG, "%s: %s", path, strerror(errno));
  if (rc == ND_EDATA) return bad(err, path, "not a regular file");
  if (rc == ND_EINVAL) return bad(err, path, "larger than 64 MiB: not a calibration file");
  if (rc) return nd__fail(err, rc, "%s: out of memory", path);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  /* one JSON object and nothing after it but white space: a file with more
   * (two files pasted together, a truncated edit) is not taken for its head */
  size_t after = root ? (size_t)(end - text) : len;
  while (after < len && text[after] && strchr(" \t\r\n", text[after])) after++;
  free(text);
  char why[256] = "";
  int ok = 1;
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return bad(err, path, "not a JSON object (a calibration file is JSON, see docs/planner.md)");
  }
  if (after < len) {
    cJSON_Delete(root);
    snprintf(why, sizeof why, "text after the JSON object, at byte %zu", after);
    return bad(err, path, why);
  }
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *devices = cJSON_GetObjectItemCaseSensitive(root, "devices");
  const cJSON *kinds = cJSON_GetObjectItemCaseSensitive(root, "kinds");
  const cJSON *bus = cJSON_GetObjectItemCaseSensitive(root, "bus");
  const cJSON *machine = cJSON_GetObjectItemCaseSensitive(root, "machine");
  const cJSON *it, *dev;
  static const char *const members[] = {"format", "machine", "devices", "bus", "step_overhead_us", "kinds"};
  for (size_t i = 0; i < sizeof members / sizeof members[0] && ok; i++)
    if (twice(root, members[i])) snprintf(why, sizeof why, "\"%s\" is given twice", members[i]), ok = 0;
  if (ok && (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, ND_CALIBRATION_FORMAT) != 0))
    snprintf(why, sizeof why, "\"format\" must be \"%s\"", ND_CALIBRATION_FORMAT), ok = 0;
  else if (ok && (!cJSON_IsObject(kinds) || !kinds->child))
    snprintf(why, sizeof why, "\"kinds\" must be an object with one entry per task kind"), ok = 0;
  else if (ok && devices && !cJSON_IsObject(devices))
    snprintf(why, sizeof why, "\"devices\" must be an object"), ok = 0;
  else if (ok && bus && !cJSON_IsObject(bus))
    snprintf(why, sizeof why, "\"bus\" must be an object"), ok = 0;
  /* printed as it is by plan --auto: text, not a terminal's control sequences */
  if (ok && machine && (!cJSON_IsString(machine) || !nd__text_ok(machine->valuestring, strlen(machine->valuestring))))
    snprintf(why, sizeof why, "\"machine\" must be a string of text without control characters"), ok = 0;
  if (ok && machine) snprintf(c->machine, sizeof c->machine, "%s", machine->valuestring);
  cJSON_ArrayForEach(it, (ok ? devices : NULL)) {
    int k = nd_device_from_name(it->string);
    if (k < 0 || twice(devices, it->string)) {
      char known[64];
      nd_device_names(known, sizeof known);
      if (k < 0) snprintf(why, sizeof why, "devices: unknown device kind '%.40s' (%s)", it->string, known), ok = 0;
      else snprintf(why, sizeof why, "devices.%s is given twice", it->string), ok = 0;
      break;
    }
    char where[64];
    snprintf(where, sizeof where, "devices.%s", it->string);
    double bytes = number(it, "memory_bytes", MAX_BYTES, where, why, sizeof why, &ok);
    if (ok && bytes != floor(bytes)) snprintf(why, sizeof why, "%s.memory_bytes must be a whole number", where), ok = 0;
    c->memory[k] = (int64_t)bytes;
    c->model.gap_s[k] = number(it, "gap_us", MAX_US, where, why, sizeof why, &ok) * 1e-6;
    c->model.wake_s[k] = number(it, "wake_us", MAX_US, where, why, sizeof why, &ok) * 1e-6;
    if (k == ND_BACKEND_CPU) {
      c->model.cpu_beside_opencl = number(it, "slowdown_beside_opencl", MAX_RATE, where, why, sizeof why, &ok);
      c->model.cpu_shared = number(it, "slowdown_shared", MAX_RATE, where, why, sizeof why, &ok);
    }
  }
  if (ok && bus) {
    c->host_device_bps = number(bus, "host_device_gbs", MAX_RATE, "bus", why, sizeof why, &ok) * 1e9;
    c->device_device_bps = number(bus, "device_device_gbs", MAX_RATE, "bus", why, sizeof why, &ok) * 1e9;
    c->latency_s = number(bus, "latency_us", MAX_US, "bus", why, sizeof why, &ok) * 1e-6;
  }
  if (ok)
    c->model.step_overhead_s = number(root, "step_overhead_us", MAX_US, "(top level)", why, sizeof why, &ok) * 1e-6;
  int timed = 0; /* an entry that gives a task some time */
  cJSON_ArrayForEach(it, (ok ? kinds : NULL)) {
    int kind = nd_task_kind_from_name(it->string);
    if (kind < 0 || !cJSON_IsObject(it) || twice(kinds, it->string)) {
      snprintf(why, sizeof why,
               kind < 0             ? "kinds: unknown task kind '%.40s'"
               : cJSON_IsObject(it) ? "kinds.%.40s is given twice"
                                    : "kinds.%.40s must be an object",
               it->string),
          ok = 0;
      break;
    }
    cJSON_ArrayForEach(dev, it) {
      int k = nd_device_from_name(dev->string);
      char where[96];
      snprintf(where, sizeof where, "kinds.%.40s.%.20s", it->string, dev->string);
      if (k < 0 || !cJSON_IsObject(dev) || twice(it, dev->string)) {
        char known[64];
        nd_device_names(known, sizeof known);
        if (k < 0) snprintf(why, sizeof why, "%s: unknown device kind (%s)", where, known), ok = 0;
        else if (!cJSON_IsObject(dev)) snprintf(why, sizeof why, "%s must be an object", where), ok = 0;
        else snprintf(why, sizeof why, "%s is given twice", where), ok = 0;
        break;
      }
      double over = number(dev, "overhead_us", MAX_US, where, why, sizeof why, &ok);
      double gflops = number(dev, "gflops", MAX_RATE, where, why, sizeof why, &ok);
      double gbs = number(dev, "gbs", MAX_RATE, where, why, sizeof why, &ok);
      timed |= over > 0 || gflops > 0 || gbs > 0;
      c->model.fit[kind][k] =
          (nd_sim_fit){1, over * 1e-6, gflops > 0 ? 1 / (gflops * 1e9) : 0, gbs > 0 ? 1 / (gbs * 1e9) : 0};
    }
    if (!ok) break;
  }
  /* every task in no time ranks every layout at 0 ms: no measurement says that */
  if (ok && !timed)
    snprintf(why, sizeof why, "every entry of \"kinds\" is 0 (overhead_us, gflops, gbs): tasks would take no time"),
        ok = 0;
  /* a file from before crossentropy_lse had a kind of its own: it times the
   * same per-row work as crossentropy_combine */
  if (ok && !cJSON_GetObjectItemCaseSensitive(kinds, nd_task_kind_name(ND_TASK_CE_LSE)))
    memcpy(c->model.fit[ND_TASK_CE_LSE], c->model.fit[ND_TASK_CE_COMBINE], sizeof c->model.fit[0]);
  cJSON_Delete(root);
  return ok ? 0 : bad(err, path, why);
}

int nd_calibration_save(const nd_calibration *c, const char *path, nd_error *err) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", ND_CALIBRATION_FORMAT);
  cJSON_AddStringToObject(root, "machine", c->machine);
  cJSON *devices = cJSON_AddObjectToObject(root, "devices");
  for (int i = 0; i < ND_BACKEND_COUNT; i++) {
    int k = nd_device_listed(i), used = 0; /* listing order: a file calibrated again keeps its bytes */
    for (int t = 0; t < ND_TASK_KIND_COUNT; t++) used |= c->model.fit[t][k].valid;
    if (!used) continue;
    cJSON *d = cJSON_AddObjectToObject(devices, nd_device_name(k));
    cJSON_AddNumberToObject(d, "memory_bytes", (double)c->memory[k]);
    cJSON_AddNumberToObject(d, "gap_us", c->model.gap_s[k] * 1e6);
    if (c->model.wake_s[k] > 0) cJSON_AddNumberToObject(d, "wake_us", c->model.wake_s[k] * 1e6);
    if (k == ND_BACKEND_CPU && c->model.cpu_beside_opencl > 0)
      cJSON_AddNumberToObject(d, "slowdown_beside_opencl", c->model.cpu_beside_opencl);
    if (k == ND_BACKEND_CPU && c->model.cpu_shared > 0)
      cJSON_AddNumberToObject(d, "slowdown_shared", c->model.cpu_shared);

  }
  cJSON *bus = cJSON_AddObjectToObject(root, "bus");
  cJSON_AddNumberToObject(bus, "host_device_gbs", c->host_device_bps / 1e9);
  cJSON_AddNumberToObject(bus, "device_device_gbs", c->device_device_bps / 1e9);
  cJSON_AddNumberToObject(bus, "latency_us", c->latency_s * 1e6);
  cJSON_AddNumberToObject(root, "step_overhead_us", c->model.step_overhead_s * 1e6);
  cJSON *kinds = cJSON_AddObjectToObject(root, "kinds");
  for (int t = 0; t < ND_TASK_KIND_COUNT; t++) {
    cJSON *kind = NULL;
    for (int i = 0; i < ND_BACKEND_COUNT; i++) {
      const nd_sim_fit *f = &c->model.fit[t][nd_device_listed(i)];
      if (!f->valid) continue;
      if (!kind) kind = cJSON_AddObjectToObject(kinds, nd_task_kind_name((enum nd_task_kind)t));
      cJSON *d = cJSON_AddObjectToObject(kind, nd_device_name(nd_device_listed(i)));
      cJSON_AddNumberToObject(d, "overhead_us", f->overhead_s * 1e6);
      cJSON_AddNumberToObject(d, "gflops", f->s_per_flop > 0 ? 1e-9 / f->s_per_flop : 0);
      cJSON_AddNumberToObject(d, "gbs", f->s_per_byte > 0 ? 1e-9 / f->s_per_byte : 0);
    }
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  /* the whole file or the one it replaces, never half of it */
  nd__atomic_file f;
  int rc = nd__atomic_open(&f, path, err);
  if (!rc) {
    rc = nd__atomic_write(&f, text, strlen(text), err);
    if (!rc) rc = nd__atomic_write(&f, "\n", 1, err);
    if (rc)
      nd__atomic_abort(&f);
    else
      rc = nd__atomic_commit(&f, err);
  }
  free(text);
  return rc;
}
