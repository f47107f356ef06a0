/* The tokenizer's parts, as read from a tokenizer.json (text/load.c), and the
 * stages of encoding (text/encode.c), the BPE model (text/bpe.c) and
 * decoding (text/decode.c). The public face: include/ndgraph/tokenizer.h. */
#ifndef ND_TEXT_TOKENIZER_H
#define ND_TEXT_TOKENIZER_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ndgraph/tokenizer.h"
#include "text/map.h"

/* A text and its pieces: piece i is buf[start[i], start[i] + len[i]),
 * flags[i] says what it is. Each stage reads one list and writes another. */
typedef struct nd__pieces {
  char *buf;
  size_t used, cap;
  struct nd__piece {
    size_t start, len;
    int64_t id; /* >= 0: an added token, matched already; -1: text */
    int at_start; /* starts at the document's first byte (Metaspace's prepend_scheme "first") */
    int no_prepend; /* the continuation of a piece cut by streaming: no Prepend normalizer */
  } *p;
  size_t n, n_cap;
} nd__pieces;

int nd__pieces_add(nd__pieces *l, const char *s, size_t len, struct nd__piece like);
void nd__pieces_free(nd__pieces *l);

/* Split behaviours, as `tokenizers` names them. */
enum nd__split { ND_SPLIT_REMOVED, ND_SPLIT_ISOLATED, ND_SPLIT_PREVIOUS, ND_SPLIT_NEXT, ND_SPLIT_CONTIGUOUS };

/* A pattern: a regex through PCRE2 (UTF, UCP), or a literal string. */
typedef struct nd__pattern {
  pcre2_code *re; /* NULL: literal */
  char *literal;  /* the literal, or the regex's source */
  size_t literal_len;
} nd__pattern;

enum nd__norm_kind { ND_NORM_REPLACE, ND_NORM_PREPEND };
typedef struct nd__norm {
  enum nd__norm_kind kind;
  nd__pattern pattern; /* Replace */
  char *content;       /* Replace's content, Prepend's prefix */
} nd__norm;

enum nd__pretok_kind { ND_PRE_SPLIT, ND_PRE_BYTELEVEL, ND_PRE_METASPACE };
enum nd__prepend { ND_PREPEND_ALWAYS, ND_PREPEND_FIRST, ND_PREPEND_NEVER };
typedef struct nd__pretok {
  enum nd__pretok_kind kind;
  nd__pattern pattern; /* Split; ByteLevel with use_regex: the GPT-2 regex */
  enum nd__split behavior;
  int invert, add_prefix_space, use_regex, split;
  char replacement[8]; /* Metaspace: its character, UTF-8 */
  enum nd__prepend prepend;
} nd__pretok;

enum nd__dec_kind { ND_DEC_BYTELEVEL, ND_DEC_BYTEFALLBACK, ND_DEC_FUSE, ND_DEC_REPLACE, ND_DEC_STRIP, ND_DEC_METASPACE };
typedef struct nd__dec {
  enum nd__dec_kind kind;
  char *from, *to; /* Replace; Metaspace: from the replacement to " " */
  char content[8]; /* Strip's character */
  int start, stop; /* Strip's counts */
  enum nd__prepend prepend;
} nd__dec;

typedef struct nd__added {
  char *content;
  size_t len;
  uint32_t id;
  int special, normalized;
} nd__added;

/* The word cache: words to their ids, dropped whole when full. */
typedef struct nd__cache {
  nd__strmap map; /* word -> offset in ids */
  char *words;
  size_t words_used, words_cap;
  uint32_t *ids; /* at an offset: the count, then the ids */
  size_t ids_used, ids_cap;
} nd__cache;

struct nd_tokenizer {
  char *path;
  /* the model: the vocabulary, the merges, their options */
  char **token; /* by id: its string (NULL: no such id), its length */
  size_t *token_len;
  uint8_t *special; /* by id: a special added token (skipped by decode) */
  int64_t vocab_size;
  nd__strmap vocab;
  nd__pairmap merges; /* (a, b) -> rank << 32 | merged id */
  int byte_fallback, fuse_unk, ignore_merges;
  int64_t unk, byte_id[256]; /* -1: none */
  /* the rest of the pipeline */
  nd__added *added;
  int n_added;
  uint8_t added_first[256]; /* the first bytes of the added tokens */
  nd__norm *norms;
  int n_norms;
  nd__pretok *pretoks;
  int n_pretoks;
  nd__dec *decs;
  int n_decs;
  int64_t eot;
  /* A cut before a space that follows and precedes a printable ASCII
   * character leaves every piece whole (text/stream.c). */
  int cut_at_spaces;
  pcre2_match_data *match;
  int regex_error; /* PCRE2's code when a match failed (not "no match") */
  nd__cache cache;
  struct nd__bpe_work *work; /* the BPE's symbols and heap, reused */
  nd__pieces scratch[3];
  char *clean; /* the input, its invalid UTF-8 replaced */
  size_t clean_cap;
  struct nd__span {
    size_t start, end;
    int match;
  } *spans; /* a piece cut by a pattern */
  size_t n_spans, spans_cap;
  char *norm[2]; /* a piece through the normalizers */
  size_t norm_cap[2];
};

/* The ids of one pre-tokenized word (text/bpe.c), appended to *ids. */
int nd__bpe_word(nd_tokenizer *tok, const char *word, size_t len, uint32_t **ids, size_t *n, size_t *cap);
/* Appends count ids to the growing array *ids. */
int nd__put_ids(uint32_t **ids, size_t *n, size_t *cap, const uint32_t *src, size_t count);
/* Frees the cache and the BPE's work space. */
void nd__bpe_free(nd_tokenizer *tok);

/* Matches of pattern in s[0, len): calls fn for each (start, end). */
int nd__pattern_find(nd_tokenizer *tok, const nd__pattern *p, const char *s, size_t len,
                     int (*fn)(void *ctx, size_t start, size_t end), void *ctx);

/* Encodes text (valid UTF-8); continuation: text goes on a piece cut by
 * streaming (text/stream.c), not a document's start. */
int nd__encode(nd_tokenizer *tok, const char *text, size_t len, int continuation, uint32_t **ids, size_t *n,
               size_t *cap, nd_error *err);

/* A document read in chunks (text/stream.c): read as read(2) does (0 at
 * the end), chunk_done (may be NULL) called after each chunk's ids are
 * appended; name for messages. */
typedef struct nd__stream {
  ssize_t (*read)(void *ctx, char *buf, size_t len);
  int (*chunk_done)(void *ctx, nd_error *err);
  void *ctx;
  const char *name;
} nd__stream;
/* Appends the ids of the document in to *ids, reading chunk bytes at a
 * time and cutting where nd__cut_at_spaces allows: the ids of the whole. */
int nd__encode_stream(nd_tokenizer *tok, const nd__stream *in, size_t chunk, uint32_t **ids, size_t *n, size_t *cap,
                      nd_error *err);

/* Whether a cut at a space in the middle of words is safe (text/stream.c). */
int nd__cut_at_spaces(const nd_tokenizer *tok);

#endif
