# tests of config, included by tests/local.mk.
check_PROGRAMS += tests/test_config tests/test_config_fuzz
TESTS += tests/test_config tests/test_config_fuzz
tests_test_config_LDADD = $(ND_TEST_LIBS)
tests_test_config_fuzz_LDADD = $(ND_TEST_LIBS)
EXTRA_DIST += tests/configs tests/fuzz_config.c
