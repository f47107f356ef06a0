/* Internal helpers to report failures through nd_error. */
#ifndef ND_COMMON_ERROR_H
#define ND_COMMON_ERROR_H

#include "ndgraph/ndgraph.h"

/* Fills err (if not NULL) with code and the formatted one-line message, and
 * returns code, so that `return nd__fail(err, ND_EIO, "%s: ...", path);` reads well. */
int nd__fail(nd_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
