/* The machine's hwloc topology, from this machine or an XML file, with a
 * one-line error naming the file when it cannot be read. */
#include "common/topology.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/file.h"

#define MAX_XML_BYTES (64 << 20) /* a machine of thousands of cores writes a few MiB */

/* The XML's text, read by us rather than by hwloc: a FIFO or a device is
 * refused instead of waited on (or read forever: /dev/zero), and a missing
 * file says so. The file is the user's input: its problems are bad input. */
static int read_xml(const char *path, char **xml, size_t *len, nd_error *err) {
  int rc = nd__read_file(path, MAX_XML_BYTES, xml, len);
  if (rc == ND_EIO) return nd__fail(err, ND_ECONFIG, "%s: cannot read the topology: %s", path, strerror(errno));
  if (rc == ND_EDATA) return nd__fail(err, ND_ECONFIG, "%s: cannot read the topology: not a regular file", path);
  if (rc == ND_EINVAL)
    return nd__fail(err, ND_ECONFIG, "%s: the topology is larger than %d MiB", path, MAX_XML_BYTES >> 20);
  if (rc) return nd__fail(err, rc, "%s: out of memory reading the topology", path);
  /* a /proc file has no size to read: it reads as empty, like an empty file */
  if (*len == 0) {
    free(*xml);
    return nd__fail(err, ND_ECONFIG, "%s: reads as empty: not an hwloc XML topology (`lstopo --of xml` writes one)",
                    path);
  }
  return 0;
}

int nd_topo_load(hwloc_topology_t *out, const char *path, nd_error *err) {
  hwloc_topology_t t;
  char *xml = NULL;
  size_t len = 0;
  int file = path && path[0], rc = file ? read_xml(path, &xml, &len, err) : 0;
  if (rc) return rc;
  /* what is wrong with a file is said in our one line: hwloc's own critical
   * messages ("does not contain any NUMA node, aborting!") would be a second
   * (a value the user set is kept) */
  if (file) setenv("HWLOC_HIDE_ERRORS", "2", 0);
  if (hwloc_topology_init(&t)) {
    free(xml);
    return nd__fail(err, ND_ENOMEM, "topology: hwloc could not start");
  }
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  /* hwloc counts the buffer's terminating NUL */
  rc = xml && hwloc_topology_set_xmlbuffer(t, xml, (int)len + 1);
  free(xml);
  if (rc) {
    hwloc_topology_destroy(t);
    return nd__fail(err, ND_ECONFIG, "%s: not an hwloc XML topology (`lstopo --of xml` writes one)", path);
  }
  if (hwloc_topology_load(t)) {
    hwloc_topology_destroy(t);
    return file ? nd__fail(err, ND_ECONFIG, "%s: hwloc could not load the topology (a NUMA node and a core at least)", path)
                : nd__fail(err, ND_EIO, "this machine: hwloc could not load the topology");
  }
  *out = t;
  return 0;
}

int nd_topo_check(const char *path, nd_error *err) {
  hwloc_topology_t t;
  int rc = nd_topo_load(&t, path, err);
  if (!rc) hwloc_topology_destroy(t);
  return rc;
}

int nd_topo_is_gpu(hwloc_obj_t obj) {
  if (obj->type != HWLOC_OBJ_OS_DEVICE) return 0;
  if (obj->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU) return 1;
  if (obj->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC) return 0;
  /* hwloc 2 names the kind in subtype, older XML in the CoProcType info */
  const char *sub = obj->subtype ? obj->subtype : hwloc_obj_get_info_by_name(obj, "CoProcType");
  return nd_device_subtype_is_gpu(sub);
}
