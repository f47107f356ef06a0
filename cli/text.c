/* Ids on stdout as text: a tokenizer's (data.tokenizer or generate's
 * --tokenizer), a byte-level model's bytes, or the ids themselves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

int nd_cli_text_open(nd_cli_text *t, const nd_config *cfg, const char *tokenizer, nd_error *err) {
  char vocab[32], path[4096];
  memset(t, 0, sizeof *t);
  long long V = nd_config_get(cfg, "model.vocab_size", vocab, sizeof vocab) == 0 ? atoll(vocab) : 0;
  if (!tokenizer && nd_config_get(cfg, "data.tokenizer", path, sizeof path) == 0 && path[0]) tokenizer = path;
  if (!tokenizer) {
    t->bytes = V == 256;
    return 0;
  }
  int rc = nd_tokenizer_load(tokenizer, &t->tok, err);
  if (rc) return rc;
  if (nd_tokenizer_vocab_size(t->tok) != V) {
    snprintf(err->msg, sizeof err->msg, "%.900s: a vocabulary of %lld ids, but model.vocab_size is %lld", tokenizer,
             (long long)nd_tokenizer_vocab_size(t->tok), V);
    nd_cli_text_close(t);
    return err->code = ND_EINVAL;
  }
  return 0;
}

void nd_cli_text_close(nd_cli_text *t) {
  nd_tokenizer_free(t->tok);
  free(t->ids);
  memset(t, 0, sizeof *t);
}

int nd_cli_text_prompt(nd_cli_text *t, const char *text, int **ids, int *n, nd_error *err) {
  uint32_t *got = NULL;
  size_t len = 0, cap = 0;
  int rc = 0;
  if (!t->tok) { /* a byte-level model reads the bytes */
    len = strlen(text);
    if (!(*ids = malloc((len ? len : 1) * sizeof **ids))) goto nomem;
    for (size_t i = 0; i < len; i++) (*ids)[i] = (unsigned char)text[i];
    *n = (int)len;
    return 0;
  }
  /* a document starts with the end-of-text id in training (`ndgraph tokenize`): so does a prompt */
  int64_t eot = nd_tokenizer_eot(t->tok);
  if (eot >= 0 && !(got = malloc((cap = 16) * sizeof *got))) goto nomem;
  if (eot >= 0) got[len++] = (uint32_t)eot;
  if ((rc = nd_tokenizer_encode(t->tok, text, strlen(text), &got, &len, &cap, err))) goto done;
  if (!(*ids = malloc((len ? len : 1) * sizeof **ids))) goto nomem;
  for (size_t i = 0; i < len; i++) (*ids)[i] = (int)got[i];
  *n = (int)len;
  goto done;
nomem:
  snprintf(err->msg, sizeof err->msg, "the prompt: out of memory");
  rc = err->code = ND_ENOMEM;
done:
  free(got);
  return rc;
}

/* The bytes of the ids' text that can be printed: all but a trailing
 * replacement character, which the next id may complete (a character split
 * over byte-fallback ids). */
static size_t settled(const char *s, size_t len, int final) {
  return !final && len >= 3 && memcmp(s + len - 3, "\xEF\xBF\xBD", 3) == 0 ? len - 3 : len;
}

/* With a tokenizer the whole text is decoded again and its new part printed:
 * a piece of an id's text depends on the ids before it. */
static void put_text(nd_cli_text *t, int final) {
  char *text = NULL;
  size_t len = 0;
  nd_error err = {0};
  if (nd_tokenizer_decode(t->tok, t->ids, t->n, &text, &len, &err) == 0) {
    size_t upto = settled(text, len, final);
    if (upto > t->shown) fwrite(text + t->shown, 1, upto - t->shown, stdout);
    if (upto > t->shown) t->shown = upto;
  }
  free(text);
}

void nd_cli_text_put(nd_cli_text *t, const int *ids, int n) {
  for (int i = 0; i < n; i++) {
    if (t->tok) {
      if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        uint32_t *grown = realloc(t->ids, cap * sizeof *grown);
        if (!grown) break; /* the text stops; the ids were generated */
        t->ids = grown, t->cap = cap;
      }
      t->ids[t->n++] = (uint32_t)ids[i];
    } else if (t->bytes) {
      fputc(ids[i], stdout);
    } else {
      printf("%d ", ids[i]);
    }
  }
  if (t->tok) put_text(t, 0);
  fflush(stdout);
}

void nd_cli_text_end(nd_cli_text *t) {
  if (t->tok) put_text(t, 1);
  t->n = t->shown = 0;
  printf("\n");
  fflush(stdout);
}
