/* Tokenizers: a Hugging Face tokenizer.json (byte-level BPE as in GPT-2,
 * Llama 3 and Qwen; SentencePiece-style BPE with byte fallback as in Llama 2
 * and Mistral) turned into ids and back, with exactly the ids of the
 * `tokenizers` library (docs/text.md). Every function returns 0 or a
 * negative code, with one line naming the file and the problem in err. */
#ifndef NDGRAPH_TOKENIZER_H
#define NDGRAPH_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "ndgraph/ndgraph.h"

typedef struct nd_tokenizer nd_tokenizer;

/* Reads path. ND_EINVAL naming the file for one that cannot be read or
 * parsed, ND_ENOTIMPL naming the file and the component it does not
 * support (a normalizer, pre-tokenizer, model, decoder or option). */
ND_EXPORT int nd_tokenizer_load(const char *path, nd_tokenizer **out, nd_error *err);
ND_EXPORT void nd_tokenizer_free(nd_tokenizer *tok);

/* Largest id + 1, over the model's vocabulary and the added tokens. */
ND_EXPORT int64_t nd_tokenizer_vocab_size(const nd_tokenizer *tok);
/* The end-of-text id: the first special added token named <|endoftext|>,
 * <|end_of_text|>, </s> or <eos>; -1 when there is none. */
ND_EXPORT int64_t nd_tokenizer_eot(const nd_tokenizer *tok);

/* Appends the ids of text (len bytes, any bytes: invalid UTF-8 is read as
 * U+FFFD, as Python's bytes.decode(errors="replace") does) to *ids, a
 * malloc'd array of *n ids and room for *cap, grown as needed (start with
 * NULL, 0, 0). Added tokens are matched in text; no template (BOS) is added.
 * Not safe to call from two threads on one tokenizer (a word cache). */
ND_EXPORT int nd_tokenizer_encode(nd_tokenizer *tok, const char *text, size_t len, uint32_t **ids, size_t *n,
                                  size_t *cap, nd_error *err);

/* The text of n ids, as the tokenizer.json's decoder writes it (special
 * tokens skipped, as `tokenizers` decode does by default) into a malloc'd,
 * NUL-terminated *text of *len bytes. ND_EINVAL for an id out of range.
 * A generator prints text as it comes by decoding the whole sequence again
 * and printing what is new (a piece may be half a character). */
ND_EXPORT int nd_tokenizer_decode(const nd_tokenizer *tok, const uint32_t *ids, size_t n, char **text, size_t *len,
                                  nd_error *err);

/* `ndgraph tokenize`: each of the n_inputs files is one document, preceded
 * by the end-of-text id eot (-1: the tokenizer's, ND_EINVAL when it has
 * none); the ids are written to out as little-endian u16 (vocabulary up to
 * 65536) or u32, through a temporary file renamed into place at the end.
 * progress: a line on stderr updated as it goes. ND_EINVAL for an input
 * that cannot be read, ND_EIO for the output. *tokens: the ids written. */
ND_EXPORT int nd_tokenize_files(nd_tokenizer *tok, const char *const *inputs, int n_inputs, const char *out,
                                int64_t eot, int progress, int64_t *tokens, nd_error *err);

#endif
