/* ndgraph command line: a thin client of libndgraph. */
#include <stdio.h>

#include "ndgraph/ndgraph.h"

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("ndgraph %s\n", NDGRAPH_VERSION);
  return 0;
}
