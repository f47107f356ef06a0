/* Datasets: text and tokens-u16 files, sequence indexing, the built-in
 * corpus, and every rejected input with its exact message. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic.h"
#include "data/builtin.h"
#include "data/dataset.h"
#include "tests/tap.h"

static char tmpdir[] = "/tmp/nd-test-data-XXXXXX";

/* Writes len bytes to tmpdir/name; returns the path (a rotating static buffer). */
static const char *write_tmp(const char *name, const void *data, size_t len) {
  static char path[8][512];
  static int slot;
  char *p = path[slot++ % 8];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "wb");
  if (!f || (len && fwrite(data, 1, len, f) != len)) {
    perror(p);
    exit(2);
  }
  fclose(f);
  return p;
}

static int streq(const char *a, const char *b) {
  if (strcmp(a, b) == 0) return 1;
  diag("got:      %s", a);
  diag("expected: %s", b);
  return 0;
}

/* The open fails with code and exactly the message want (want NULL: only the code). */
static void expect_fail(const char *what, const char *spec, enum nd_data_format fmt, int64_t vocab, int seq_len,
                        int code, const char *want) {
  nd_dataset *ds = (nd_dataset *)&ds;
  nd_error err = {0};
  int rc = nd_dataset_open(&ds, spec, fmt, vocab, seq_len, &err);
  ok(rc == code && err.code == code && ds == NULL && (!want || streq(err.msg, want)), "%s: rc %d, %s", what, rc,
     err.msg);
}

static void test_text(void) {
  const char *path = write_tmp("abc.txt", "abcdefghij", 10);
  nd_dataset *ds = NULL;
  nd_error err = {0};
  int32_t in[3], tg[3];
  ok(nd_dataset_open(&ds, path, ND_FORMAT_TEXT, 256, 3, &err) == 0, "text: open (%s)", err.msg);
  if (!ds) return;
  ok(nd_dataset_tokens(ds) == 10, "text: 10 tokens");
  ok(nd_dataset_sequences(ds) == 3, "text: (10 - 1) / 3 = 3 sequences");
  ok(strcmp(nd_dataset_name(ds), path) == 0, "text: name is the path");
  nd_dataset_read(ds, 0, 1, in, tg);
  ok(in[0] == 'a' && in[2] == 'c' && tg[0] == 'b' && tg[2] == 'd', "text: sequence 0");
  nd_dataset_read(ds, 2, 1, in, tg);
  ok(in[0] == 'g' && in[2] == 'i' && tg[0] == 'h' && tg[2] == 'j', "text: sequence 2 ends at the last token");
  nd_dataset_read(ds, 3, 1, in, tg);
  ok(in[0] == 'a' && tg[2] == 'd', "text: sequence 3 wraps to 0");
  nd_dataset_read(ds, 3 * 1000003 + 1, 1, in, tg);
  ok(in[0] == 'd' && tg[2] == 'g', "text: large j taken modulo");
  nd_dataset_close(ds);

  /* A smaller vocabulary also bounds text bytes. */
  expect_fail("text byte >= vocab", path, ND_FORMAT_TEXT, 100, 3, ND_EDATA, NULL);
}

static void test_u16(void) {
  enum { N = 37, B = 2, T = 4 };
  uint8_t buf[2 * N];
  int32_t tok[N];
  for (int i = 0; i < N; i++) {
    tok[i] = (i * 7919 + 11) % 50257;
    buf[2 * i] = (uint8_t)(tok[i] & 0xff);
    buf[2 * i + 1] = (uint8_t)(tok[i] >> 8);
  }
  const char *path = write_tmp("tok.bin", buf, sizeof buf);
  nd_dataset *ds = NULL;
  nd_error err = {0};
  ok(nd_dataset_open(&ds, path, ND_FORMAT_TOKENS_U16, 50257, T, &err) == 0, "u16: open (%s)", err.msg);
  if (!ds) return;
  ok(nd_dataset_tokens(ds) == N, "u16: %d tokens", N);
  ok(nd_dataset_sequences(ds) == (N - 1) / T, "u16: %d sequences", (N - 1) / T);
  int32_t in[T], tg[T];
  nd_dataset_read(ds, 1, 1, in, tg);
  ok(in[0] == tok[4] && in[3] == tok[7] && tg[0] == tok[5] && tg[3] == tok[8],
     "u16: little-endian ids, sequence 1 = tokens 4..8");

  /* llm.c: batch b reads B*T+1 tokens from offset b*B*T; inputs are the
   * first B*T, targets the last B*T. The same as sequences b*B .. b*B+B-1. */
  int same = 1;
  for (int b = 0; b < (N - 1) / (B * T); b++) {
    for (int s = 0; s < B; s++) {
      nd_dataset_read(ds, (int64_t)b * B + s, 1, in, tg);
      for (int t = 0; t < T; t++) {
        int64_t k = (int64_t)b * B * T + s * T + t;
        same &= in[t] == tok[k] && tg[t] == tok[k + 1];
      }
    }
  }
  ok(same, "u16: batches match llm.c's DataLoader");
  nd_dataset_read(ds, 9, 1, in, NULL);
  ok(in[0] == tok[0], "u16: sequence 9 wraps to 0 (9 sequences); targets may be NULL");
  /* several sequences in one read, across the wrap: 7, 8, then 0, 1 */
  int32_t rows_in[4 * T], rows_tg[4 * T];
  ok(nd_dataset_read(ds, 7, 4, rows_in, rows_tg) == 0, "u16: 4 sequences read at once");
  same = 1;
  for (int r = 0; r < 4; r++) {
    nd_dataset_read(ds, 7 + r, 1, in, tg);
    same &= memcmp(in, rows_in + r * T, sizeof in) == 0 && memcmp(tg, rows_tg + r * T, sizeof tg) == 0;
  }
  ok(same, "u16: a read of 4 sequences across the wrap gives the rows of 4 reads of one");
  nd_dataset_close(ds);
}

/* Llama 3 sized ids, above 65535, little-endian uint32; and the same checks. */
static void test_u32(void) {
  enum { N = 13, T = 4 };
  uint8_t buf[4 * N];
  int32_t tok[N];
  for (int i = 0; i < N; i++) {
    tok[i] = (i * 104729 + 3) % 128256;
    for (int k = 0; k < 4; k++) buf[4 * i + k] = (uint8_t)((uint32_t)tok[i] >> (8 * k));
  }
  const char *path = write_tmp("tok32.bin", buf, sizeof buf);
  nd_dataset *ds = NULL;
  nd_error err = {0};
  ok(nd_dataset_open(&ds, path, ND_FORMAT_TOKENS_U32, 128256, T, &err) == 0, "u32: open (%s)", err.msg);
  if (ds) {
    int32_t in[T], tg[T];
    nd_dataset_read(ds, 2, 1, in, tg);
    ok(nd_dataset_tokens(ds) == N && in[0] == tok[8] && tg[3] == tok[12] && tok[8] > 65535,
       "u32: %d tokens, little-endian ids above 65535, sequence 2 = tokens 8..12", N);
    nd_dataset_close(ds);
  }
  char want[700];
  path = write_tmp("odd32.bin", buf, 10);
  snprintf(want, sizeof want, "%s: byte count 10 is not a multiple of 4 for tokens-u32 (4 bytes per token)", path);
  expect_fail("u32 byte count", path, ND_FORMAT_TOKENS_U32, 128256, 1, ND_EDATA, want);
  uint8_t huge[12] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0};
  path = write_tmp("huge32.bin", huge, sizeof huge);
  snprintf(want, sizeof want, "%s: token 4294967295 at offset 4 is >= vocab_size 128256", path);
  expect_fail("u32 id beyond int32 reported whole", path, ND_FORMAT_TOKENS_U32, 128256, 2, ND_EDATA, want);
}

static void test_builtin(void) {
  uint8_t *a = NULL, *b = NULL, *v = NULL;
  size_t na = 0, nb = 0, nv = 0;
  nd_error err = {0};
  ok(nd__builtin_generate("tales", &a, &na, &err) == 0 && nd__builtin_generate("tales", &b, &nb, &err) == 0 &&
         nd__builtin_generate("tales-val", &v, &nv, &err) == 0,
     "builtin: generate (%s)", err.msg);
  if (!a || !b || !v) goto out;
  ok(na == nb && memcmp(a, b, na) == 0, "builtin: deterministic (%zu bytes, twice the same)", na);
  ok(na >= 1000000 && na < 1010000, "builtin: train is about 1 MB (%zu)", na);
  ok(nv >= 100000 && nv < 110000, "builtin: val is about 100 KB (%zu)", nv);
  ok(memcmp(a, v, 256) != 0, "builtin: train and val differ");
  int ascii = 1;
  for (size_t i = 0; i < na; i++) ascii &= a[i] < 128;
  for (size_t i = 0; i < nv; i++) ascii &= v[i] < 128;
  ok(ascii, "builtin: every byte < 128");

  /* Learnability proxy: the empirical H(next | prev) of the byte stream,
   * what a perfect bigram model reaches. */
  static double pair[256][256], row[256];
  memset(pair, 0, sizeof pair);
  memset(row, 0, sizeof row);
  for (size_t i = 0; i + 1 < na; i++) {
    pair[a[i]][a[i + 1]] += 1;
    row[a[i]] += 1;
  }
  double h = 0;
  for (int x = 0; x < 256; x++)
    for (int y = 0; y < 256; y++)
      if (pair[x][y] > 0) h -= pair[x][y] / (double)(na - 1) * log(pair[x][y] / row[x]);
  ok(h < 2.3, "builtin: bigram conditional entropy %.3f nats < 2.3", h);

  nd_dataset *ds = NULL;
  ok(nd_dataset_open(&ds, "builtin:tales", ND_FORMAT_TEXT, 256, 64, &err) == 0, "builtin: open builtin:tales (%s)",
     err.msg);
  if (ds) {
    int32_t in[64], tg[64];
    int match = nd_dataset_tokens(ds) == (int64_t)na;
    nd_dataset_read(ds, 5, 1, in, tg);
    for (int t = 0; t < 64; t++) match &= in[t] == a[5 * 64 + t] && tg[t] == a[5 * 64 + t + 1];
    ok(match, "builtin: dataset serves the generated bytes");
    ok(strcmp(nd_dataset_name(ds), "builtin:tales") == 0, "builtin: name");
    nd_dataset_close(ds);
  }
  expect_fail("builtin: unknown name", "builtin:nope", ND_FORMAT_TEXT, 256, 64, ND_EDATA,
              "builtin:nope: unknown built-in dataset (known: tales, tales-val)");
  expect_fail("builtin: tokens-u16", "builtin:tales", ND_FORMAT_TOKENS_U16, 50257, 64, ND_EDATA,
              "builtin:tales: built-in datasets are text; set data.format: text");
out:
  free(a);
  free(b);
  free(v);
}

static void test_bad_inputs(void) {
  char want[1024], path[512];

  snprintf(path, sizeof path, "%s/missing.bin", tmpdir);
  snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
  expect_fail("missing file", path, ND_FORMAT_TEXT, 256, 4, ND_EDATA, want);

  snprintf(want, sizeof want, "%s: not a regular file", tmpdir);
  expect_fail("directory", tmpdir, ND_FORMAT_TEXT, 256, 4, ND_EDATA, want);

  const char *p = write_tmp("empty.txt", "", 0);
  snprintf(want, sizeof want, "%s: 0 tokens (text), need at least seq_len + 1 = 5", p);
  expect_fail("empty file", p, ND_FORMAT_TEXT, 256, 4, ND_EDATA, want);

  p = write_tmp("short.txt", "abcd", 4);
  snprintf(want, sizeof want, "%s: 4 tokens (text), need at least seq_len + 1 = 5", p);
  expect_fail("seq_len tokens only", p, ND_FORMAT_TEXT, 256, 4, ND_EDATA, want);

  uint8_t u[12] = {1, 0, 2, 0, 3, 0, 4, 0};
  p = write_tmp("short.bin", u, 8);
  snprintf(want, sizeof want, "%s: 4 tokens (tokens-u16), need at least seq_len + 1 = 5", p);
  expect_fail("u16 too short", p, ND_FORMAT_TOKENS_U16, 50257, 4, ND_EDATA, want);

  p = write_tmp("odd.bin", u, 11);
  snprintf(want, sizeof want, "%s: odd byte count 11 for tokens-u16 (2 bytes per token)", p);
  expect_fail("odd byte count", p, ND_FORMAT_TOKENS_U16, 50257, 4, ND_EDATA, want);

  /* 60000 = 0xEA60 at token 5, byte offset 10. */
  uint8_t big[16] = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 0x60, 0xEA, 7, 0, 0x60, 0xEA};
  p = write_tmp("big.bin", big, sizeof big);
  snprintf(want, sizeof want, "%s: token 60000 at offset 10 is >= vocab_size 50257", p);
  expect_fail("token >= vocab_size (first one reported)", p, ND_FORMAT_TOKENS_U16, 50257, 4, ND_EDATA, want);

  p = write_tmp("high.txt", "abc\xc3\xa9xyz", 8);
  snprintf(want, sizeof want, "%s: token 195 at offset 3 is >= vocab_size 128", p);
  expect_fail("text byte >= vocab_size", p, ND_FORMAT_TEXT, 128, 4, ND_EDATA, want);

  p = write_tmp("fine.txt", "abcdefgh", 8);
  expect_fail("seq_len 0", p, ND_FORMAT_TEXT, 256, 0, ND_EINVAL, NULL);
  expect_fail("vocab_size 0", p, ND_FORMAT_TEXT, 0, 4, ND_EINVAL, NULL);

  nd_dataset *ds = NULL;
  ok(nd_dataset_open(&ds, p, ND_FORMAT_TEXT, 256, 4, NULL) == 0 && ds, "a NULL nd_error is allowed");
  nd_dataset_close(ds);
  ok(nd_dataset_open(&ds, "/nonexistent/x", ND_FORMAT_TEXT, 256, 4, NULL) == ND_EDATA, "a NULL nd_error on failure");
  nd_dataset_close(NULL);
}

/* u16 ids 0, 1, 2, ... written to name: n tokens, token `at` replaced by id. */
static const char *write_ids(const char *name, int n, int at, uint16_t id) {
  uint8_t buf[2 * 64];
  for (int i = 0; i < n && i < 64; i++) {
    uint16_t v = i == at ? id : (uint16_t)i;
    buf[2 * i] = (uint8_t)(v & 0xff);
    buf[2 * i + 1] = (uint8_t)(v >> 8);
  }
  return write_tmp(name, buf, (size_t)(2 * n));
}

/* Overwrites the u16 id of token i of path in place (what another program
 * rewriting the file under a run does). */
static void poke_id(const char *path, int i, uint16_t id) {
  FILE *f = fopen(path, "r+b");
  uint8_t b[2] = {(uint8_t)(id & 0xff), (uint8_t)(id >> 8)};
  if (!f || fseek(f, 2L * i, SEEK_SET) != 0 || fwrite(b, 1, 2, f) != 2 || fclose(f) != 0) {
    perror(path);
    exit(2);
  }
}

/* The id range at its boundary, at open and at every read, and a file that
 * changes under an open dataset: cut short, rewritten with ids out of range,
 * removed. Each read failure is the dataset's to report, once. */
static void test_changes(void) {
  enum { N = 40, T = 4, V = 40 };
  char want[1024];
  const char *p = write_ids("edge.bin", N, 10, V);
  snprintf(want, sizeof want, "%s: token 40 at offset 20 is >= vocab_size 40", p);
  expect_fail("an id equal to vocab_size is refused at open", p, ND_FORMAT_TOKENS_U16, V, T, ND_EDATA, want);
  p = write_tmp("edge.txt", "abcdefgh", 8);
  snprintf(want, sizeof want, "%s: token 104 at offset 7 is >= vocab_size 104", p);
  expect_fail("text: a byte equal to vocab_size is refused at open", p, ND_FORMAT_TEXT, 104, T, ND_EDATA, want);

  p = write_ids("live.bin", N, 10, V - 1);
  nd_dataset *ds = NULL;
  nd_error err = {0};
  ok(nd_dataset_open(&ds, p, ND_FORMAT_TOKENS_U16, V, T, &err) == 0, "vocab_size - 1 is accepted at open (%s)",
     err.msg);
  if (!ds) return;
  int32_t in[8 * T], tg[8 * T];
  ok(nd_dataset_read(ds, 2, 2, in, tg) == 0 && in[2] == V - 1 && nd_dataset_failure(ds, &err) == 0,
     "vocab_size - 1 is accepted at read");

  poke_id(p, 10, V);
  memset(in, 0x7f, sizeof in);
  int rc = nd_dataset_read(ds, 2, 2, in, tg);
  int zero = 1;
  for (int t = 0; t < 2 * T; t++) zero &= in[t] == 0 && tg[t] == 0;
  ok(rc == ND_EDATA && zero, "an id equal to vocab_size written after the open: the read fails, its rows are zero");
  snprintf(want, sizeof want, "%s: token 40 at offset 20 is >= vocab_size 40 (the file changed while in use)", p);
  err = (nd_error){0};
  ok(nd_dataset_failure(ds, &err) == ND_EDATA && err.code == ND_EDATA && streq(err.msg, want),
     "the failure names the file, the offset and the id: %s", err.msg);
  ok(nd_dataset_failure(ds, &err) == 0, "a failure is reported once");
  ok(nd_dataset_read(ds, 0, 2, in, tg) == 0 && nd_dataset_failure(ds, &err) == 0,
     "sequences away from the bad id still read");

  poke_id(p, 10, 0xffff);
  ok(nd_dataset_read(ds, 0, 8, in, NULL) == ND_EDATA, "65535 in a read of 8 sequences (only inputs asked) fails");
  snprintf(want, sizeof want, "%s: token 65535 at offset 20 is >= vocab_size 40 (the file changed while in use)", p);
  ok(nd_dataset_failure(ds, &err) == ND_EDATA && streq(err.msg, want), "65535 named: %s", err.msg);
  poke_id(p, 10, 10);

  if (truncate(p, 30) != 0) perror(p);
  ok(nd_dataset_read(ds, 0, 1, in, tg) == 0, "cut to 15 tokens: sequence 0 still reads");
  ok(nd_dataset_read(ds, 3, 1, in, tg) == ND_EDATA, "cut to 15 tokens: sequence 3 (tokens 12 to 16) fails");
  snprintf(want, sizeof want,
           "%s: the file shrank to 30 bytes while in use (80 when opened): cannot read bytes 24 to 34", p);
  ok(nd_dataset_failure(ds, &err) == ND_EDATA && streq(err.msg, want), "the shrinking is named: %s", err.msg);

  if (truncate(p, 80) != 0 || unlink(p) != 0) perror(p);
  ok(nd_dataset_read(ds, 3, 1, in, tg) == 0 && in[0] == 12 && in[3] == 0 && nd_dataset_failure(ds, &err) == 0,
     "grown back with zeros, then removed: the open file still reads");
  nd_dataset_close(ds);
}

int main(void) {
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 2;
  }
  test_text();
  test_u16();
  test_u32();
  test_builtin();
  test_bad_inputs();
  test_changes();
  nd_error err = {0};
  ok(nd__remove_tree(tmpdir, &err) == 0 && access(tmpdir, F_OK) != 0, "temporary files removed");
  return done_testing();
}
