# tests of issue 16's guarantees (docs/reliability.md), included by tests/local.mk.
check_PROGRAMS += tests/test_reference
TESTS += tests/test_reference
tests_test_reference_SOURCES = tests/test_reference.c tests/ref/gpt.c tests/ref/gpt.h tests/ref/ref.c \
	tests/ref/ref.h tests/runtime/harness.h tests/tap.h
tests_test_reference_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_collective
TESTS += tests/test_collective
tests_test_collective_SOURCES = tests/test_collective.c tests/tap.h
tests_test_collective_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_ndws_priority
TESTS += tests/test_ndws_priority
tests_test_ndws_priority_SOURCES = tests/test_ndws_priority.c tests/ndws_start.h tests/tap.h
tests_test_ndws_priority_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_train_rules
TESTS += tests/test_train_rules
tests_test_train_rules_SOURCES = tests/test_train_rules.c tests/ref/gpt.c tests/ref/gpt.h tests/ref/ref.c \
	tests/ref/ref.h tests/runtime/harness.h tests/tap.h
tests_test_train_rules_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_safetensors_fuzz tests/test_trace_fuzz
TESTS += tests/test_safetensors_fuzz tests/test_trace_fuzz
tests_test_safetensors_fuzz_SOURCES = tests/test_safetensors_fuzz.c tests/fuzz/replay.h tests/tap.h
tests_test_safetensors_fuzz_LDADD = $(ND_TEST_LIBS)
tests_test_trace_fuzz_SOURCES = tests/test_trace_fuzz.c tests/fuzz/replay.h tests/tap.h
tests_test_trace_fuzz_LDADD = $(ND_TEST_LIBS)
EXTRA_DIST += tests/fuzz tests/fuzz_safetensors.c tests/fuzz_trace.c
TESTS += tests/test_kill.sh tests/test_data_changes.sh tests/test_dp_shard.sh
EXTRA_DIST += tests/test_kill.sh tests/test_data_changes.sh tests/test_dp_shard.sh
check_PROGRAMS += tests/test_dp_order
TESTS += tests/test_dp_order
tests_test_dp_order_SOURCES = tests/test_dp_order.c tests/runtime/harness.h tests/tap.h
tests_test_dp_order_LDADD = $(ND_TEST_LIBS)
