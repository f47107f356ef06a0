/* The kinds of device by name (common/device.h). */
#include "common/device.h"

#include <string.h>

/* by kind, so that each name stays with its member; a member added to the
 * enum without a name here reads as "unknown" (NULL) */
static const char *const names[ND_BACKEND_COUNT] = {
    [ND_BACKEND_CPU] = "cpu",
    [ND_BACKEND_CUDA] = "cuda",
    [ND_BACKEND_OPENCL] = "opencl",
};

const char *nd_device_name(int kind) {
  return kind >= 0 && kind < ND_BACKEND_COUNT && names[kind] ? names[kind] : "unknown";
}

int nd_device_from_name(const char *name) {
  for (int k = 0; k < ND_BACKEND_COUNT; k++)
    if (names[k] && strcmp(name, names[k]) == 0) return k;
  return -1;
}
