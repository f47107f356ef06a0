/* Token datasets: a file (or a built-in corpus) seen as one long stream of
 * token ids, cut into training sequences. */
#ifndef ND_DATA_DATASET_H
#define ND_DATA_DATASET_H

#include <stdint.h>

#include "configs/config.h"
#include "ndgraph/ndgraph.h"

typedef struct nd_dataset nd_dataset;

/* spec: a file path, or "builtin:NAME" (tales, tales-val). format:
 * ND_FORMAT_TEXT (each byte is a token), ND_FORMAT_TOKENS_U16 (raw
 * little-endian uint16 ids, as written by llm.c / nanoGPT) or
 * ND_FORMAT_TOKENS_U32 (uint32 ids, for vocabularies past 65536). Files are
 * mmap'd and scanned once: ND_EDATA when the file is missing or unreadable,
 * holds fewer than seq_len + 1 tokens, has a byte count that is not a whole
 * number of tokens, or holds
 * a token id >= vocab_size (the message gives the first such byte offset).
 * ND_EINVAL for vocab_size < 1 or seq_len < 1. */
int nd_dataset_open(nd_dataset **out, const char *spec, enum nd_data_format format, int64_t vocab_size, int seq_len,
                    nd_error *err);
void nd_dataset_close(nd_dataset *ds);

/* Number of tokens in the stream. */
int64_t nd_dataset_tokens(const nd_dataset *ds);
/* Number of distinct sequences: (tokens - 1) / seq_len, at least 1. */
int64_t nd_dataset_sequences(const nd_dataset *ds);
/* Sequence j (any j >= 0, taken modulo nd_dataset_sequences) starts at token
 * s = (j mod S) * seq_len: inputs[0..T) = tokens [s, s+T), targets[0..T) =
 * tokens [s+1, s+T+1). Batch b of B sequences is therefore the llm.c batch
 * at token offset b*B*T (as long as it does not wrap). */
void nd_dataset_sequence(const nd_dataset *ds, int64_t j, int32_t *inputs, int32_t *targets);
/* The spec it was opened with, for messages. */
const char *nd_dataset_name(const nd_dataset *ds);

#endif
