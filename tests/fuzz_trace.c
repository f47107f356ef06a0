/* libFuzzer target for the trace reader (Chrome JSON -> nd_trace_model) and
 * the summary computed from it; built and run by scripts/fuzz-trace.sh. Any
 * JSON document must be read or refused with a one-line message naming the
 * input; a model that was read must summarize and print without crashing. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "trace/model.h"
#include "trace/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *devnull;
  if (!devnull && !(devnull = fopen("/dev/null", "w"))) __builtin_trap();
  cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
  if (!doc) return 0;
  nd_trace_model m;
  nd_error err = {0};
  int rc = nd_trace_model_from_json(&m, doc, "fuzz", &err);
  cJSON_Delete(doc);
  if (rc != 0) {
    if (strncmp(err.msg, "fuzz: ", 6) != 0 || strchr(err.msg, '\n')) __builtin_trap();
    return 0;
  }
  nd_trace_summary s;
  if (nd_trace_summarize(&m, &s) == 0) {
    for (int json = 0; json < 2; json++) nd_trace_summary_print(devnull, "fuzz", &m, &s, json);
    nd_trace_summary_free(&s);
  }
  nd_trace_model_free(&m);
  return 0;
}
