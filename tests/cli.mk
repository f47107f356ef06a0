# tests of the command line as a whole, included by tests/local.mk.
# Exit statuses: one table for every command (the bad plugins are tests/plugin.mk's).
TESTS += tests/test_exit_status.sh
EXTRA_DIST += tests/test_exit_status.sh
# OpenBLAS's kernel set: never the generic one on a CPU with AVX2 (kernels/cpu/openblas_core.c).
TESTS += tests/test_blas_kernels.sh
EXTRA_DIST += tests/test_blas_kernels.sh
