# tests of kernels, included by tests/local.mk.
check_PROGRAMS += tests/test_kernels
TESTS += tests/test_kernels
tests_test_kernels_SOURCES = tests/test_kernels.c tests/ref/ref.c tests/ref/ref.h tests/tap.h
tests_test_kernels_LDADD = $(ND_TEST_LIBS)
# Backends are reached through their ops table only.
TESTS += tests/backend_rules.sh
EXTRA_DIST += tests/backend_rules.sh
