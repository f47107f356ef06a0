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

/* A document in memory, read a few bytes at a time. */
typedef struct mem_in {
  const char *p;
  size_t left;
} mem_in;
static ssize_t mem_read(void *ctx, char *buf, size_t len) {
  mem_in *m = ctx;
  len = len < m->left ? len : m->left;
  memcpy(buf, m->p, len);
  m->p += len, m->left -= len;
  return (ssize_t)len;
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
    /* in chunks of a few bytes: hundreds of cuts, each where a piece ends */
    for (size_t chunk = 61; chunk <= 4096; chunk *= 8) {
      uint32_t *cut = NULL;
      size_t cn = 0, ccap = 0, same = 1;
      mem_in m = {text, len};
      nd__stream in = {mem_read, NULL, &m, file};
      ok(text && nd__encode_stream(tok, &in, chunk, &cut, &cn, &ccap, &err) == 0, "%s %s: encodes in chunks of %zu (%s)",
         name, file, chunk, err.msg);
      for (size_t i = 0; i < n && i < cn && same; i++) same = cut[i] == ids[i];
      ok(same && cn == n, "%s %s: read in chunks of %zu bytes, the same %zu ids (got %zu)", name, file, chunk, n, cn);
      free(cut);
    }
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

/* A variant of a fixture (edit: a JSON fragment merged into the model or
 * the root) and whether streaming may cut it at spaces. */
static void cuts(const char *srcdir, const char *tmp, const char *name, const char *what, void (*edit)(cJSON *root),
                 int want) {
  char path[4096], out[4096];
  size_t len;
  snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/%s.json", srcdir, name);
  char *text = slurp(path, &len);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  if (!root) {
    ok(0, "%s read", path);
    free(text);
    return;
  }
  edit(root);
  snprintf(out, sizeof out, "%s/cuts.json", tmp);
  char *s = cJSON_PrintUnformatted(root);
  FILE *f = fopen(out, "w");
  fputs(s, f);
  fclose(f);
  nd_error err = {0};
  nd_tokenizer *tok = NULL;
  ok(nd_tokenizer_load(out, &tok, &err) == 0 && tok->cut_at_spaces == want, "%s: %s (%s)", name, what,
     want ? "cut at spaces" : "read whole");
  nd_tokenizer_free(tok);
  free(s), free(text);
  cJSON_Delete(root);
}

/* a token with the space inside: "e▁", merged from "e" and "▁" */
static void token_across(cJSON *root) {
  cJSON *model = cJSON_GetObjectItem(root, "model");
  cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "e\xE2\x96\x81", 5000);
  cJSON *pair = cJSON_CreateArray();
  cJSON_AddItemToArray(pair, cJSON_CreateString("e"));
  cJSON_AddItemToArray(pair, cJSON_CreateString("\xE2\x96\x81"));
  cJSON_AddItemToArray(cJSON_GetObjectItem(model, "merges"), pair);
}
static void no_regex(cJSON *root) {
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(root, "pre_tokenizer"), "use_regex", cJSON_CreateFalse());
}
static void other_regex(cJSON *root) {
  cJSON *split = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "pre_tokenizer"), "pretokenizers"), 0);
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(split, "pattern"), "Regex", cJSON_CreateString("\\p{L}+|\\s+"));
}
static void nothing(cJSON *root) { (void)root; }
/* an added token that is not byte-level text: a space in it */
static void spaced_token(cJSON *root) {
  cJSON *t = cJSON_CreateObject();
  cJSON_AddNumberToObject(t, "id", 721);
  cJSON_AddStringToObject(t, "content", "hello world");
  cJSON_AddBoolToObject(t, "special", 0);
  cJSON_AddItemToArray(cJSON_GetObjectItem(root, "added_tokens"), t);
}

/* The ByteLevel decoder gives a token whose characters are not all
 * byte-level ones as it is (tokenizers: "hello world", not "hello\0world"). */
static void decode_raw(const char *srcdir, const char *tmp) {
  char path[4096], out[4096];
  size_t len;
  snprintf(path, sizeof path, "%s/tests/fixtures/tokenizer/gpt2.json", srcdir);
  char *text = slurp(path, &len);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  if (!root) {
    ok(0, "%s read", path);
    free(text);
    return;
  }
  spaced_token(root);
  snprintf(out, sizeof out, "%s/spaced.json", tmp);
  char *s = cJSON_PrintUnformatted(root);
  FILE *f = fopen(out, "w");
  fputs(s, f);
  fclose(f);
  nd_error err = {0};
  nd_tokenizer *tok = NULL;
  uint32_t ids[] = {721, 721};
  char *dec = NULL;
  size_t dlen = 0;
  ok(nd_tokenizer_load(out, &tok, &err) == 0 && nd_tokenizer_decode(tok, ids, 2, &dec, &dlen, &err) == 0 &&
         dlen == 22 && !memcmp(dec, "hello worldhello world", 22),
     "ByteLevel decode: a token with a space stays as it is (%s)", err.msg);
  free(dec);
  nd_tokenizer_free(tok);
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

  cuts(srcdir, tmp, "llama2", "no pre-tokenizer, no token with the space inside", nothing, 1);
  cuts(srcdir, tmp, "llama2", "no pre-tokenizer, a token e\xE2\x96\x81", token_across, 0);
  cuts(srcdir, tmp, "gpt2", "ByteLevel without its regex", no_regex, 0);
  cuts(srcdir, tmp, "llama3", "a Split regex not known to cut at spaces", other_regex, 0);

  decode_raw(srcdir, tmp);

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
