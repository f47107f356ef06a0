/* The trace reader and summary on the seed corpus of tests/fuzz/trace and
 * thousands of mutations of it, as scripts/fuzz-trace.sh does at length:
 * every seed reads; any JSON document is read or refused with one line
 * naming the input; a trace that was read summarizes and prints. */
#include <cjson/cJSON.h>

#include "tests/fuzz/replay.h"
#include "trace/model.h"
#include "trace/summary.h"

#define MUTATIONS 6000

static int failures;
static FILE *devnull;

static void expect(int cond, const char *what, const char *input, size_t len) {
  if (cond || failures++) return;
  diag("%s; input (%zu bytes):", what, len);
  fwrite(input, 1, len < 2048 ? len : 2048, stdout);
  printf("\n");
}

/* Returns 1 when the input was read as a trace. */
static int run(const char *input, size_t len) {
  cJSON *doc = cJSON_ParseWithLength(input, len);
  if (!doc) return 0;
  nd_trace_model m;
  nd_error err = {0};
  int rc = nd_trace_model_from_json(&m, doc, "fuzz", &err);
  cJSON_Delete(doc);
  if (rc) {
    expect(strncmp(err.msg, "fuzz: ", 6) == 0 && !strchr(err.msg, '\n'), "message not one line naming the input", input,
           len);
    return 0;
  }
  nd_trace_summary s;
  if (nd_trace_summarize(&m, &s) == 0) {
    for (int json = 0; json < 2; json++) nd_trace_summary_print(devnull, "fuzz", &m, &s, json);
    nd_trace_summary_free(&s);
  }
  nd_trace_model_free(&m);
  return 1;
}

static const char *const tokens[] = {"\"traceEvents\"",
                                     "\"ph\":\"X\"",
                                     "\"ph\":\"s\"",
                                     "\"ph\":\"f\"",
                                     "\"ph\":\"M\"",
                                     "\"bp\":\"e\"",
                                     "\"ts\":",
                                     "\"dur\":",
                                     "\"pid\":",
                                     "\"tid\":",
                                     "\"id\":",
                                     "\"args\":{}",
                                     "\"task\":",
                                     "\"micro_batch\":",
                                     "1e308",
                                     "-1e308",
                                     "1e999",
                                     "-0",
                                     "2147483648",
                                     "-9e18",
                                     "[",
                                     "]",
                                     "{",
                                     "}",
                                     ",",
                                     ":",
                                     "\"\"",
                                     "null"};

int main(void) {
  fuzz_corpus c = {0};
  devnull = fopen("/dev/null", "w");
  fuzz_read_seeds(&c, "trace");
  if (!ok(c.n >= 3 && devnull, "%zu seeds", c.n)) return done_testing();
  int read = 0;
  for (size_t i = 0; i < c.n; i++) read += run(c.data[i], c.len[i]);
  ok(read == (int)c.n && failures == 0, "every seed reads and summarizes (%d of %zu)", read, c.n);
  failures = 0;
  char *buf = malloc(FUZZ_CAP);
  int accepted = 0;
  for (int i = 0; i < MUTATIONS && buf; i++) {
    size_t s = fuzz_below(&c, c.n);
    memcpy(buf, c.data[s], c.len[s]);
    size_t len = fuzz_mutate(&c, buf, c.len[s], FUZZ_CAP, tokens, sizeof tokens / sizeof *tokens);
    accepted += run(buf, len);
  }
  free(buf);
  ok(failures == 0, "%d mutations (%d read as traces)", MUTATIONS, accepted);
  fclose(devnull);
  fuzz_free(&c);
  return done_testing();
}
