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
 * ND_FORMAT_TOKENS_U32 (uint32 ids, for vocabularies past 65536). A file
 * stays open and is read (never mapped) at each batch; it is scanned once
 * here: ND_EDATA when the file is missing or unreadable, holds fewer than
 * seq_len + 1 tokens, has a byte count that is not a whole number of tokens,
 * or holds a token id >= vocab_size (the message gives the first such byte
 * offset). ND_EINVAL for vocab_size < 1 or seq_len < 1. */
int nd_dataset_open(nd_dataset **out, const char *spec, enum nd_data_format format, int64_t vocab_size, int seq_len,
                    nd_error *err);
/* data.tokenizer: spec's text goes through the tokenizer.json at tokenizer,
 * once, here, into ids held in memory (the file is not read again): the
 * end-of-text id first, where the tokenizer has one, as `ndgraph tokenize`
 * writes a one-document file. ND_EINVAL when the tokenizer's vocabulary is
 * not vocab_size ids, or as nd_tokenizer_load; otherwise as nd_dataset_open. */
int nd_dataset_open_tokenized(nd_dataset **out, const char *spec, const char *tokenizer, int64_t vocab_size,
                              int seq_len, nd_error *err);
void nd_dataset_close(nd_dataset *ds);

/* Number of tokens in the stream. */
int64_t nd_dataset_tokens(const nd_dataset *ds);
/* Number of distinct sequences: (tokens - 1) / seq_len, at least 1. */
int64_t nd_dataset_sequences(const nd_dataset *ds);
/* Sequences j .. j + count - 1 into count rows of T = seq_len ids each of
 * inputs and targets (either may be NULL). Sequence j (any j >= 0, taken
 * modulo nd_dataset_sequences) starts at token s = (j mod S) * T:
 * inputs = tokens [s, s+T), targets = tokens [s+1, s+T+1). Batch b of B
 * sequences is therefore the llm.c batch at token offset b*B*T (as long as
 * it does not wrap). The file is read now and every id checked as at open,
 * since it may have changed: ND_EDATA when it has shrunk or holds an id >=
 * vocab_size (ND_ENOMEM, ND_EDATA for an I/O error); the rows are then zero
 * and the first such failure is kept for nd_dataset_failure. Safe to call
 * from several threads at once. */
int nd_dataset_read(nd_dataset *ds, int64_t j, int count, int32_t *inputs, int32_t *targets);
/* The first failure of nd_dataset_read since the last call, into err (one
 * line naming the file and the problem): its code, or 0 when none. */
int nd_dataset_failure(nd_dataset *ds, nd_error *err);
/* Whether a read has failed since the last nd_dataset_failure. */
int nd_dataset_failed(const nd_dataset *ds);
/* The spec it was opened with, for messages. */
const char *nd_dataset_name(const nd_dataset *ds);

#endif
