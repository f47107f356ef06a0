/* The kinds of device (common/device.h). */
#include "common/device.h"

#include <stdio.h>
#include <string.h>

#include "ndgraph/ndgraph.h"

/* By kind, so that each row stays with its member; a member added to the
 * enum without a row here reads as "unknown". */
static const struct {
  const char *name, *label, *unit;
  int listed;    /* position in listing order */
  int placement; /* sort position of its units */
} kinds[ND_BACKEND_COUNT] = {
    [ND_BACKEND_CPU] = {"cpu", "CPU", "cpu", 0, 1},
    [ND_BACKEND_CUDA] = {"cuda", "CUDA", "gpu", 2, 0},
    [ND_BACKEND_OPENCL] = {"opencl", "OpenCL", "opencl", 1, 2},
};

/* hwloc's subtypes of GPU OS devices (hwloc 2; older XML has them as the CoProcType info) */
static const char *const gpu_subtypes[] = {"CUDA", "OpenCL", "ROCm", "LevelZero"};

static int known(int kind) { return kind >= 0 && kind < ND_BACKEND_COUNT && kinds[kind].name; }

const char *nd_device_name(int kind) { return known(kind) ? kinds[kind].name : "unknown"; }

const char *nd_device_label(int kind) { return known(kind) ? kinds[kind].label : "unknown"; }

const char *nd_device_unit_name(int kind) { return known(kind) ? kinds[kind].unit : "unknown"; }

int nd_device_from_name(const char *name) {
  for (int k = 0; k < ND_BACKEND_COUNT; k++)
    if (kinds[k].name && strcmp(name, kinds[k].name) == 0) return k;
  return -1;
}

int nd_device_listed(int i) {
  for (int k = 0; k < ND_BACKEND_COUNT; k++)
    if (kinds[k].listed == i) return k;
  return -1;
}

void nd_device_names(char *out, size_t size) {
  size_t n = 0;
  for (int i = 0; i < ND_BACKEND_COUNT && n < size; i++) {
    int w = snprintf(out + n, size - n, "%s%s", i ? ", " : "", nd_device_name(nd_device_listed(i)));
    if (w < 0) break;
    n += (size_t)w;
  }
}

int nd_device_placement_rank(int kind) { return known(kind) ? kinds[kind].placement : ND_BACKEND_COUNT; }

int nd_device_gpu_kind(void) { return ND_BACKEND_CUDA; }

const char *nd_device_gpu_subtype(void) { return gpu_subtypes[0]; }

int nd_device_subtype_is_gpu(const char *subtype) {
  for (size_t i = 0; subtype && i < sizeof gpu_subtypes / sizeof gpu_subtypes[0]; i++)
    if (strcmp(subtype, gpu_subtypes[i]) == 0) return 1;
  return 0;
}
