# tests of io, included by tests/local.mk.
check_PROGRAMS += tests/test_data tests/test_checkpoint
TESTS += tests/test_data tests/test_checkpoint
tests_test_data_LDADD = $(ND_TEST_LIBS)
tests_test_checkpoint_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_ckpt_model
TESTS += tests/test_ckpt_model
tests_test_ckpt_model_SOURCES = tests/test_ckpt_model.c tests/tap.h
tests_test_ckpt_model_LDADD = $(ND_TEST_LIBS)
