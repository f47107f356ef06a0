# tests of io, included by tests/local.mk.
check_PROGRAMS += tests/test_data tests/test_checkpoint
TESTS += tests/test_data tests/test_checkpoint
tests_test_data_LDADD = $(ND_TEST_LIBS)
tests_test_checkpoint_LDADD = $(ND_TEST_LIBS)
