/* Writes a built-in dataset to a file (or stdout), to look at it or to feed
 * it to another trainer:  scripts/nd-dump-builtin tales [OUT]  */
#include <stdio.h>
#include <stdlib.h>

#include "data/builtin.h"

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s NAME [OUT]   (NAME: %s)\n", argv[0], nd__builtin_names());
    return 2;
  }
  uint8_t *b = NULL;
  size_t n = 0;
  nd_error err = {0};
  if (nd__builtin_generate(argv[1], &b, &n, &err) != 0) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  FILE *f = argc == 3 ? fopen(argv[2], "wb") : stdout;
  int rc = 0;
  if (!f || fwrite(b, 1, n, f) != n || (f != stdout && fclose(f) != 0)) {
    perror(argc == 3 ? argv[2] : "stdout");
    rc = 1;
  }
  free(b);
  return rc;
}
