/* libFuzzer target for the configuration loader; built and run by
 * scripts/fuzz-config.sh. Besides "no crash, no leak", it checks that a
 * loaded config dumps to YAML that loads back, and that errors are one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ndgraph/ndgraph.h"

static void check_error(int rc, const nd_error *err) {
  if (rc != ND_ECONFIG) __builtin_trap();
  if (strchr(err->msg, '\n') || strstr(err->msg, ": error: ") == NULL) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nd_config *cfg = NULL, *back = NULL;
  nd_error err = {0};
  char *yaml = NULL, *text = NULL;
  size_t len = 0;
  if (nd_config_new(&cfg) != 0 || nd_config_new(&back) != 0) __builtin_trap();
  int rc = nd_config_load_string(cfg, "fuzz", (const char *)data, size, &err);
  if (rc != 0) {
    check_error(rc, &err);
  } else {
    rc = nd_config_validate(cfg, &err);
    if (rc != 0) check_error(rc, &err);
    if (nd_config_dump(cfg, &yaml, &len) != 0) __builtin_trap();
    if (nd_config_load_string(back, "dump", yaml, len, &err) != 0) __builtin_trap();
  }
  /* The same bytes as a --set assignment exercise the other entry point. */
  text = malloc(size + 1);
  if (!text) goto cleanup;
  memcpy(text, data, size);
  text[size] = '\0';
  rc = nd_config_set_assignment(cfg, text, &err);
  if (rc != 0) check_error(rc, &err);
cleanup:
  free(text);
  free(yaml);
  nd_config_free(back);
  nd_config_free(cfg);
  return 0;
}
