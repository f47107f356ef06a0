/* The tokenizer against Hugging Face `tokenizers`: the ids and the decoded
 * text of the fixtures (tests/fixtures/tokenizer/make.py), document by
 * document through nd_tokenizer_encode and nd_tokenizer_decode; invalid
 * UTF-8 read as Python reads it; components it does not support refused by
 * name. (test_tokenize.sh checks the command and its streaming.) */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
  if (buf) buf[n] = 0, *len = (size_t)n;
  fclose(f);
  return buf;
}

/* Python's bytes.decode("utf-8", errors="replace") of these bytes. */
static void check_clean(const char *in, size_t n, const char *want, const char *what) {
  char *out = NULL;
  size_t len = 0, cap = 0;
  nd__utf8_clean(in, n, &out, &len, &cap);
  ok(len == strlen(want) && memcmp(out, want, len) == 0, "invalid UTF-8 as Python reads it: %s", what);
  free(out);
}

#define FFFD "\xEF\xBF\xBD"

static void fixture(const char *srcdir, const char *corpus, const char *name) {
  char path[4096];
  nd_error err = {0};
  nd_tokenizer *tok;
  snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/%s.json", srcdir, name);
  if (!ok(nd_tokenizer_load(path, &tok, &err) == 0, "%s: loads (%s)", name, err.msg)) return;
  ok(tok->cut_at_spaces, "%s: documents are cut in chunks at spaces", name);
  size_t tlen, jlen;
  snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/expected/%s.tokens", srcdir, name);
  unsigned char *want = (unsigned char *)slurp(path, &tlen);
  snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/expected/%s.json", srcdir, name);
  char *json = slurp(path, &jlen);
  cJSON *exp = json ? cJSON_Parse(json) : NULL;
  if (!ok(want && exp, "%s: expected ids and texts read", name)) goto done;
  ok(nd_tokenizer_vocab_size(tok) == cJSON_GetObjectItem(exp, "vocab")->valueint, "%s: vocabulary of %lld", name,
     (long long)nd_tokenizer_vocab_size(tok));
  ok(nd_tokenizer_eot(tok) == cJSON_GetObjectItem(exp, "eot")->valueint, "%s: end-of-text id %lld", name,
     (long long)nd_tokenizer_eot(tok));
  size_t at = 0;
  const cJSON *d;
  cJSON_ArrayForEach(d, cJSON_GetObjectItem(exp, "docs")) {
    const char *file = cJSON_GetObjectItem(d, "file")->valuestring;
    size_t count = (size_t)cJSON_GetObjectItem(d, "ids")->valueint, len;
    snprintf(path, sizeof path, "%s/%s", corpus, file);
    char *text = slurp(path, &len);
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0, bad = (size_t)-1;
    at++; /* the end-of-text id before each document */
    ok(text && nd_tokenizer_encode(tok, text, len, &ids, &n, &cap, &err) == 0, "%s %s: encodes (%s)", name, file,
       err.msg);
    for (size_t i = 0; i < n && i < count && bad == (size_t)-1; i++)
      if (ids[i] != (uint32_t)(want[2 * (at + i)] | want[2 * (at + i) + 1] << 8)) bad = i;
    ok(n == count && bad == (size_t)-1, "%s %s: the %zu ids of tokenizers (got %zu, first difference at %zd)", name,
       file, count, n, bad == (size_t)-1 ? (ssize_t)-1 : (ssize_t)bad);
    at += count;
    /* decode: tokenizers' text, or the document itself as Python reads it */
    char *dec = NULL, *clean = NULL;
    size_t dlen = 0, clen = 0, ccap = 0;
    const cJSON *wd = cJSON_GetObjectItem(d, "decoded");
    if (cJSON_IsString(wd)) clean = strdup(wd->valuestring), clen = strlen(clean);
    else if (text) nd__utf8_clean(text, len, &clean, &clen, &ccap);
    ok(nd_tokenizer_decode(tok, ids, n, &dec, &dlen, &err) == 0 && dlen == clen && memcmp(dec, clean, clen) == 0,
       "%s %s: decodes to tokenizers' text (%zu bytes, got %zu)", name, file, clen, dlen);
    free(dec), free(clean), free(ids), free(text);
  }
  ok(2 * at == tlen, "%s: every expected id compared", name);
done:
  cJSON_Delete(exp);
  free(json), free(want);
  nd_tokenizer_free(tok);
}

/* A tokenizer.json with one part replaced: refused with one line naming
 * the file and the part. */
static void refused(const char *srcdir, const char *tmp, const char *key, const char *value, int code,
                    const char *want) {
  char path[4096], out[4096];
  size_t len;
  snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/gpt2.json", srcdir);
  char *text = slurp(path, &len);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  cJSON *v = cJSON_Parse(value);
  if (!root || !v) {
    ok(0, "%s: fixture read", key);
    return;
  }
  if (!strcmp(key, "model")) {
    cJSON *m = cJSON_GetObjectItem(root, "model");
    cJSON_ReplaceItemInObject(m, "type", v);
  } else
    cJSON_ReplaceItemInObject(root, key, v);
  snprintf(out, sizeof out, "%s/bad.json", tmp);
  char *s = cJSON_PrintUnformatted(root);
  FILE *f = fopen(out, "w");
  fputs(s, f);
  fclose(f);
  nd_error err = {0};
  nd_tokenizer *tok = NULL;
  int rc = nd_tokenizer_load(out, &tok, &err);
  char expect[4200];
  snprintf(expect, sizeof expect, "%s: %s", out, want);
  ok(rc == code && !tok && !strcmp(err.msg, expect), "refused: %s (%s)", want, err.msg);
  free(s), free(text);
  cJSON_Delete(root);
}

int main(void) {
  const char *srcdir = getenv("ND_SRCDIR") ? getenv("ND_SRCDIR") : ".";
  char tmp[] = "/tmp/ndgraph-tok-XXXXXX", cmd[8192];
  if (!mkdtemp(tmp)) return 1;
  snprintf(cmd, sizeof cmd, "python3 '%s/tests/fixtures/tokenizer/corpus.py' test '%s'", srcdir, tmp);
  ok(system(cmd) == 0, "the test corpus is written (%s)", cmd);

  check_clean("a\xff" "b", 3, "a" FFFD "b", "a lone 0xFF");
  check_clean("\xe2\x82x", 3, FFFD "x", "a cut 3-byte sequence is one U+FFFD");
  check_clean("\xe2\x82", 2, FFFD, "a 3-byte sequence cut by the end");
  check_clean("\xed\xa0\x80", 3, FFFD FFFD FFFD, "a surrogate is three");
  check_clean("\xc0\xaf", 2, FFFD FFFD, "an overlong form is two");
  check_clean("\xf0\x9f\x98 ", 4, FFFD " ", "a cut 4-byte sequence is one");
  check_clean("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD, "past U+10FFFF is four");
  check_clean("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80", "an emoji stays");

  fixture(srcdir, tmp, "gpt2");
  fixture(srcdir, tmp, "llama2");
  fixture(srcdir, tmp, "llama3");

  refused(srcdir, tmp, "normalizer", "{\"type\": \"NFC\"}", ND_ENOTIMPL, "normalizer NFC is not supported");
  refused(srcdir, tmp, "pre_tokenizer", "{\"type\": \"Whitespace\"}", ND_ENOTIMPL,
          "pre_tokenizer Whitespace is not supported");
  refused(srcdir, tmp, "decoder", "{\"type\": \"WordPiece\"}", ND_ENOTIMPL, "decoder WordPiece is not supported");
  refused(srcdir, tmp, "model", "\"Unigram\"", ND_ENOTIMPL, "model Unigram is not supported");
  refused(srcdir, tmp, "truncation", "{\"max_length\": 8}", ND_ENOTIMPL, "option truncation is not supported");
  refused(srcdir, tmp, "pre_tokenizer", "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}",
          ND_ENOTIMPL, "regex /(/ at offset 1: missing closing parenthesis");

  nd_error err = {0};
  nd_tokenizer *tok = NULL;
  ok(nd_tokenizer_load("/nonexistent/tokenizer.json", &tok, &err) == ND_EINVAL &&
         !strcmp(err.msg, "/nonexistent/tokenizer.json: cannot open: No such file or directory"),
     "a missing file: %s", err.msg);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd)) diag("could not remove %s", tmp);
  return done_testing();
}
