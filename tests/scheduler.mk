# tests of scheduler, included by tests/local.mk.
check_PROGRAMS += tests/test_ndws_stress
TESTS += tests/test_ndws_stress
tests_test_ndws_stress_SOURCES = tests/test_ndws_stress.c tests/tap.h
tests_test_ndws_stress_LDADD = $(ND_TEST_LIBS)
