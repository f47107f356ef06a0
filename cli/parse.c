/* The arguments every configured command shares: CONFIG, --set and its own options. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

int nd_cli_parse(int argc, char **argv, nd_cli_option *opts, int n_opts, nd_config **out) {
  nd_config *cfg = NULL;
  nd_error err = {0};
  const char *path = NULL;
  /* the file first, whatever its place, so that --set applies on top of it */
  for (int i = 0; i < argc; i++) {
    if (argv[i][0] != '-') {
      if (path) {
        fprintf(stderr, "ndgraph: more than one configuration file ('%s' and '%s')\n", path, argv[i]);
        return ND_EXIT_BAD_INPUT;
      }
      path = argv[i];
      continue;
    }
    int known = strcmp(argv[i], "--set") == 0;
    for (int k = 0; k < n_opts && !known; k++)
      known = strcmp(argv[i], opts[k].name) == 0 && opts[k].takes != ND_CLI_FLAG;
    if (known) i++; /* skip its value */
  }
  if (nd_config_new(&cfg)) {
    fprintf(stderr, "ndgraph: out of memory\n");
    return ND_EXIT_BAD_INPUT;
  }
  if (path && nd_config_load_file(cfg, path, &err)) goto bad;
  for (int i = 0; i < argc; i++) {
    if (argv[i][0] != '-') continue;
    if (strcmp(argv[i], "--set") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "ndgraph: --set needs section.key=value\n");
        goto usage;
      }
      if (nd_config_set_assignment(cfg, argv[++i], &err)) goto bad;
      continue;
    }
    int k = 0;
    while (k < n_opts && strcmp(argv[i], opts[k].name) != 0) k++;
    if (k == n_opts) {
      fprintf(stderr, "ndgraph: unknown option '%s'\n", argv[i]);
      goto usage;
    }
    if (opts[k].takes == ND_CLI_FLAG) {
      opts[k].value = "1";
    } else if (i + 1 < argc && (argv[i + 1][0] || opts[k].takes == ND_CLI_VALUE_OR_EMPTY)) {
      opts[k].value = argv[++i];
    } else {
      /* an empty path would name the current directory's files or none */
      fprintf(stderr, "ndgraph: %s needs a value%s\n", argv[i], i + 1 < argc ? ", not an empty one" : "");
      goto usage;
    }
  }
  if (nd_config_validate(cfg, &err)) goto bad;
  char tf32[8];
  if (nd_config_get(cfg, "runtime.tf32", tf32, sizeof tf32) == 0 && strcmp(tf32, "true") == 0)
    fprintf(stderr, "ndgraph: note: runtime.tf32 is an alias of train.precision: tf32\n");
  *out = cfg;
  return 0;
bad:
  fprintf(stderr, "%s\n", err.msg);
usage:
  nd_config_free(cfg);
  return ND_EXIT_BAD_INPUT; /* the configuration is the command's input, whatever kept it from reading */
}

/* A whole number of [min, max] for option, or the exit status of bad input. */
static int whole(const char *option, const char *text, long long min, long long max, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < min || v > max) {
    fprintf(stderr, "ndgraph: %s '%s': expected a whole number from %lld to %lld\n", option, text, min, max);
    return ND_EXIT_BAD_INPUT;
  }
  *out = v;
  return 0;
}

int nd_cli_count(const char *option, const char *text, long long max, long long *out) {
  return whole(option, text, 1, max, out);
}

int nd_cli_index(const char *option, const char *text, long long max, long long *out) {
  return whole(option, text, 0, max, out);
}
