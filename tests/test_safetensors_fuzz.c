/* The checkpoint reader (nd_safetensors_open/get) on the seed corpus of
 * tests/fuzz/safetensors and thousands of mutations of it, as
 * scripts/fuzz-safetensors.sh does at length: every seed opens; every input
 * opens or is refused with ND_ECHECKPOINT/ND_EIO and one line naming the
 * file; every tensor of a file that opened reads whole, or is refused the
 * same way. Half the mutations edit the JSON header only and keep its
 * length prefix right, so they get past the first check. */
#include <unistd.h>

#include "checkpoint/safetensors.h"
#include "tests/fuzz/replay.h"

#define MUTATIONS 6000

static char path[64];
static int failures;

static void expect(int cond, const char *what, const char *input, size_t len) {
  if (cond || failures++) return;
  diag("%s; input (%zu bytes):", what, len);
  for (size_t i = 0; i < len && i < 512; i++) printf(i % 32 ? "%02x" : "\n# %02x", (unsigned char)input[i]);
  printf("\n");
}

static void expect_error(int rc, const nd_error *err, int codes_ok, const char *input, size_t len) {
  expect(codes_ok, "unexpected return code", input, len);
  expect(strstr(err->msg, path) != NULL && strchr(err->msg, '\n') == NULL, "message not one line naming the file",
         input, len);
  (void)rc;
}

/* Returns 1 when the input opened. */
static int run(const char *input, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(input, 1, len, f) != len || fclose(f)) {
    expect(0, "cannot write the input file", input, 0);
    return 0;
  }
  nd_safetensors *st = NULL;
  nd_error err = {0};
  int rc = nd_safetensors_open(&st, path, &err);
  if (rc) {
    expect_error(rc, &err, rc == ND_ECHECKPOINT || rc == ND_EIO, input, len);
    return 0;
  }
  volatile float sink = 0;
  for (int i = 0; i < nd_safetensors_count(st); i++) {
    const float *p;
    int64_t shape[4], n = 1;
    int ndim;
    rc = nd_safetensors_get(st, nd_safetensors_name(st, i), &p, shape, &ndim, &err);
    if (rc) {
      expect_error(rc, &err, rc == ND_ECHECKPOINT, input, len);
      continue;
    }
    for (int d = 0; d < ndim; d++) n *= shape[d];
    for (int64_t k = 0; k < n; k++) sink += p[k];
  }
  nd_safetensors_close(st);
  return 1;
}

static const char *const tokens[] = {"\"dtype\"",
                                     "\"shape\"",
                                     "\"data_offsets\"",
                                     "\"F32\"",
                                     "\"F16\"",
                                     "\"__metadata__\"",
                                     "\"transformer.",
                                     "[",
                                     "]",
                                     "{",
                                     "}",
                                     ":",
                                     ",",
                                     "1e999",
                                     "9007199254740993",
                                     "-1",
                                     "18446744073709551616",
                                     "\\u0000",
                                     "0.5",
                                     "\"\"",
                                     "null",
                                     "[0,0]",
                                     "\"h.0.x\":{}"};

int main(void) {
  fuzz_corpus c = {0};
  fuzz_read_seeds(&c, "safetensors");
  snprintf(path, sizeof path, "/tmp/nd-st-fuzz-%d.safetensors", (int)getpid());
  if (!ok(c.n >= 5, "%zu seeds", c.n)) return done_testing();
  int opened = 0;
  for (size_t i = 0; i < c.n; i++) opened += run(c.data[i], c.len[i]);
  ok(opened == (int)c.n && failures == 0, "every seed opens and reads (%d of %zu)", opened, c.n);

  failures = 0;
  char *buf = malloc(FUZZ_CAP);
  int header_only = 0, accepted = 0;
  for (int i = 0; i < MUTATIONS && buf; i++) {
    size_t s = fuzz_below(&c, c.n), len = c.len[s];
    memcpy(buf, c.data[s], len);
    uint64_t hlen = 0;
    for (int b = 0; b < 8; b++) hlen |= (uint64_t)(unsigned char)buf[b] << (8 * b);
    if (i % 2 && hlen <= len - 8) {
      /* mutate the header text, then make the prefix say its new length */
      char *rest = malloc(len);
      size_t tail = len - 8 - hlen;
      memcpy(rest, buf + 8 + hlen, tail);
      size_t h = fuzz_mutate(&c, buf + 8, hlen, FUZZ_CAP - 8 - tail, tokens, sizeof tokens / sizeof *tokens);
      memcpy(buf + 8 + h, rest, tail);
      free(rest);
      for (int b = 0; b < 8; b++) buf[b] = (char)((uint64_t)h >> (8 * b));
      len = 8 + h + tail;
      header_only++;
    } else {
      len = fuzz_mutate(&c, buf, len, FUZZ_CAP, tokens, sizeof tokens / sizeof *tokens);
    }
    accepted += run(buf, len);
  }
  free(buf);
  ok(failures == 0, "%d mutations (%d of the header alone; %d opened)", MUTATIONS, header_only, accepted);
  unlink(path);
  fuzz_free(&c);
  return done_testing();
}
