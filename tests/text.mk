# tests of text/ (the tokenizer), included by tests/local.mk.
check_PROGRAMS += tests/test_tokenizer
TESTS += tests/test_tokenizer tests/test_tokenize.sh tests/test_tokenize_peer.sh
tests_test_tokenizer_SOURCES = tests/test_tokenizer.c tests/tap.h
tests_test_tokenizer_LDADD = $(ND_TEST_LIBS)
EXTRA_DIST += tests/test_tokenize.sh tests/test_tokenize_peer.sh tests/fixtures/tokenizer
