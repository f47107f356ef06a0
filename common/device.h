/* The kinds of device and what the rest of the library may know of each.
 * ndgraph has one enum of them, the plugin ABI's enum nd_kernel_backend
 * (include/ndgraph/kernel.h): kernels register under it, placement units and
 * the simulator's workers carry it, and calibration files name its members
 * by these names. common/device.c is the one table of them outside kernels/:
 * the rest of the library asks it, never names a device. */
#ifndef ND_COMMON_DEVICE_H
#define ND_COMMON_DEVICE_H

#include <stddef.h>

#include "ndgraph/kernel.h"
#include "ndgraph/ndgraph.h"

/* The kind's name, as calibration files, `plan`, traces and the
 * configuration keys (runtime.NAME_devices) write it; "unknown" for a
 * number outside the enum. */
const char *nd_device_name(int kind);
/* The kind so named, or -1. */
int nd_device_from_name(const char *name);
/* The kinds' names in listing order, "cpu, opencl, ...", in out (at most
 * size bytes), for messages that list them. */
void nd_device_names(char *out, size_t size);
/* nd_device_listed (the public API): the order in which files and reports
 * list kinds, fixed so that they keep their bytes. */
/* What a rank's unit on this kind is called in the stage lines: "cpu",
 * "gpu", "opencl". */
const char *nd_device_unit_name(int kind);
/* Where units of this kind go when placement sorts units: lower first. */
int nd_device_placement_rank(int kind);
/* The kind that runs a machine's GPUs (the hwloc topology's GPU OS devices
 * where runtime.topology or this machine lists them): a device with its own
 * memory that takes whole ranks, placed before the CPU cores. */
int nd_device_gpu_kind(void);
/* hwloc's subtype for OS devices of the GPU kind's API (hwloc 2). */
const char *nd_device_gpu_subtype(void);
/* Whether hwloc's OS-device subtype names a GPU of any vendor API. */
int nd_device_subtype_is_gpu(const char *subtype);

#endif
