/* safetensors files (the Hugging Face tensor format):
 *   u64 little-endian N | N bytes of JSON header, space-padded | raw data
 * The header maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (offsets relative to the end of the header), plus an
 * optional "__metadata__" map of strings. ndgraph writes F32 only, with the
 * header padded to a multiple of 8 so that every tensor is 8-byte aligned
 * in a mapping. */
#ifndef ND_CHECKPOINT_SAFETENSORS_H
#define ND_CHECKPOINT_SAFETENSORS_H

#include <stdint.h>

#include "ndgraph/ndgraph.h"

typedef struct nd_st_tensor {
  const char *name;
  int ndim; /* 0..4 */
  int64_t shape[4];
  const float *data; /* prod(shape) floats; may be NULL when that is 0 */
} nd_st_tensor;

/* Writes the n tensors (in the order given) to path atomically: PATH.tmp.PID,
 * fsync, rename over PATH, fsync of the directory. The metadata is
 * {"format": "pt"}, which transformers' loader expects. */
int nd_safetensors_write(const char *path, const nd_st_tensor *tensors, int n, nd_error *err);

/* A reader: the file mapped read-only and its header parsed and checked
 * (header length vs file size, JSON, dtypes' sizes against shapes, offsets
 * in range and not overlapping). Any problem is ND_ECHECKPOINT with one line
 * naming the file. */
typedef struct nd_safetensors nd_safetensors;
int nd_safetensors_open(nd_safetensors **out, const char *path, nd_error *err);
void nd_safetensors_close(nd_safetensors *st);

/* Number of tensors (every dtype, every shard), and the name of tensor i in
 * file order (shard after shard). */
int nd_safetensors_count(const nd_safetensors *st);
const char *nd_safetensors_name(const nd_safetensors *st, int i);

/* Looks a tensor up by name; a stored "transformer."-prefixed name matches
 * too (Hugging Face GPT2LMHeadModel files). On success *data points into the
 * mapping (valid until close), shape[0..ndim) and *ndim are filled.
 * ND_ECHECKPOINT "FILE: no tensor NAME" when missing; ND_ECHECKPOINT naming
 * the tensor when it is not F32 or has more than 4 dimensions. */
int nd_safetensors_get(const nd_safetensors *st, const char *name, const float **data, int64_t shape[4], int *ndim,
                       nd_error *err);

#endif
