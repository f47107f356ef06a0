/* `ndgraph tokenize --tokenizer tokenizer.json IN... -o OUT [--eot ID]`:
 * text files, one document each, into a token file `run` reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "ndgraph/tokenizer.h"

static int usage(void) {
  fprintf(stderr, "usage: ndgraph tokenize --tokenizer tokenizer.json IN... -o OUT [--eot ID]\n");
  return ND_EXIT_BAD_INPUT;
}

int nd_cli_tokenize(int argc, char **argv) {
  const char *path = NULL, *out = NULL;
  long long eot = -1;
  int n_in = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc)
      path = argv[++i];
    else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc)
      out = argv[++i];
    else if (strcmp(argv[i], "--eot") == 0 && i + 1 < argc) {
      char *end;
      const char *v = argv[++i];
      eot = strtoll(v, &end, 10);
      if (end == v || *end || eot < 0 || eot >= 1LL << 31) {
        fprintf(stderr, "ndgraph: --eot '%s': expected a token id from 0 to %lld\n", v, (1LL << 31) - 1);
        return ND_EXIT_BAD_INPUT;
      }
    } else if (argv[i][0] != '-' || !argv[i][1])
      argv[n_in++] = argv[i]; /* the inputs, gathered at the front */
    else {
      fprintf(stderr, "ndgraph tokenize: unexpected argument '%s'\n", argv[i]);
      return usage();
    }
  }
  if (!path || !out || n_in == 0) return usage();
  nd_error err = {0};
  nd_tokenizer *tok;
  int rc = nd_tokenizer_load(path, &tok, &err);
  if (rc) {
    nd_cli_fail(rc, &err);
    return ND_EXIT_BAD_INPUT; /* the tokenizer is this command's input */
  }
  int64_t tokens;
  rc = nd_tokenize_files(tok, (const char *const *)argv, n_in, out, eot, isatty(2), &tokens, &err);
  int64_t vocab = nd_tokenizer_vocab_size(tok);
  nd_tokenizer_free(tok);
  if (rc) return nd_cli_fail(rc, &err);
  printf("%s: %lld tokens from %d document%s, %s (vocabulary %lld)\n", out, (long long)tokens, n_in, n_in > 1 ? "s" : "",
         vocab <= 65536 ? "tokens-u16" : "tokens-u32", (long long)vocab);
  return 0;
}
