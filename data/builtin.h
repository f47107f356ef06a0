/* Built-in datasets: text corpora generated in memory, so that a first run
 * needs no download. Internal to data/. */
#ifndef ND_DATA_BUILTIN_H
#define ND_DATA_BUILTIN_H

#include <stddef.h>
#include <stdint.h>

#include "ndgraph/ndgraph.h"

/* Generates the corpus NAME (the part after "builtin:") into a malloc'd
 * buffer (*bytes, *len); the caller frees it. Unknown name: ND_EDATA with a
 * message listing the known names. */
int nd__builtin_generate(const char *name, uint8_t **bytes, size_t *len, nd_error *err);

/* The known names, comma-separated, for messages ("tales, tales-val"). */
const char *nd__builtin_names(void);

#endif
