# tests of the runtime (training through StarPU), included by tests/local.mk.
check_PROGRAMS += tests/test_parity
TESTS += tests/test_parity
tests_test_parity_SOURCES = tests/test_parity.c tests/runtime/harness.h tests/tap.h
tests_test_parity_LDADD = $(ND_TEST_LIBS)
