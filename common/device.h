/* The kinds of device by name. ndgraph has one enum of them, the plugin
 * ABI's enum nd_kernel_backend (include/ndgraph/kernel.h): kernels register
 * under it, placement units and the simulator's workers carry it, and
 * calibration files name its members by these names. */
#ifndef ND_COMMON_DEVICE_H
#define ND_COMMON_DEVICE_H

#include "ndgraph/kernel.h"

/* The kind's name, as calibration files, `plan` and messages write it
 * (common/device.c lists them); "unknown" for a number outside the enum. */
const char *nd_device_name(int kind);
/* The kind so named, or -1. */
int nd_device_from_name(const char *name);

#endif
