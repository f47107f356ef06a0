#!/usr/bin/env bash
# bench/mixed-node's arguments: each bad one refused with one line naming it
# and exit 2, before any run (the runs need an OpenCL device and minutes;
# docs/opencl.md has the benchmark).
. "${ND_SRCDIR:-.}/tests/tap.sh"
bench="${ND_BUILDDIR:-.}/bench/mixed-node"

expect 2 "^bench/mixed-node: ROUNDS '0'" "ROUNDS 0 is refused in one line" -- "$bench" 1 2 small 0
expect 2 "^bench/mixed-node: ROUNDS '65'" "ROUNDS 65, over the 64 a table holds, is refused in one line" -- \
  "$bench" 1 2 small 65
expect 2 "^bench/mixed-node: MODEL 'nosuch'" "an unknown model is refused in one line, naming it" -- "$bench" 1 2 nosuch 3
expect 2 "^bench/mixed-node: STEPS 'x'" "a step count that is not a number is refused in one line" -- \
  "$bench" x 2 small 3
done_testing
