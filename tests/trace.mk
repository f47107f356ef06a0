# tests of trace, included by tests/local.mk.
check_PROGRAMS += tests/test_trace
TESTS += tests/test_trace tests/trace.sh
tests_test_trace_SOURCES = tests/test_trace.c tests/runtime/harness.h tests/tap.h
tests_test_trace_LDADD = $(ND_TEST_LIBS)
EXTRA_DIST += tests/trace.sh tests/traces
check_PROGRAMS += tests/test_trace_path
TESTS += tests/test_trace_path
tests_test_trace_path_SOURCES = tests/test_trace_path.c tests/tap.h
tests_test_trace_path_LDADD = $(ND_TEST_LIBS)
TESTS += tests/test_plot.sh
EXTRA_DIST += tests/test_plot.sh
check_PROGRAMS += tests/test_trace_share
TESTS += tests/test_trace_share
tests_test_trace_share_SOURCES = tests/test_trace_share.c tests/share_config.h tests/tap.h
tests_test_trace_share_LDADD = $(ND_TEST_LIBS)
