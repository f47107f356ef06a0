# tests of issue 16's guarantees (docs/reliability.md), included by tests/local.mk.
check_PROGRAMS += tests/test_reference
TESTS += tests/test_reference
tests_test_reference_SOURCES = tests/test_reference.c tests/ref/gpt.c tests/ref/gpt.h tests/ref/ref.c \
	tests/ref/ref.h tests/runtime/harness.h tests/tap.h
tests_test_reference_LDADD = $(ND_TEST_LIBS)
