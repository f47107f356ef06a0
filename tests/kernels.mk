# tests of kernels, included by tests/local.mk.
check_PROGRAMS += tests/test_kernels
TESTS += tests/test_kernels
tests_test_kernels_SOURCES = tests/test_kernels.c tests/ref/ref.c tests/ref/ref.h tests/tap.h
tests_test_kernels_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_bf16
TESTS += tests/test_bf16
tests_test_bf16_SOURCES = tests/test_bf16.c tests/tap.h
tests_test_bf16_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_share
TESTS += tests/test_share
tests_test_share_SOURCES = tests/test_share.c tests/tap.h
tests_test_share_LDADD = $(ND_TEST_LIBS)
# compiles the kernels' sources into itself, so it links BLAS and libm only
check_PROGRAMS += tests/test_kernel_clones
TESTS += tests/test_kernel_clones
tests_test_kernel_clones_SOURCES = tests/test_kernel_clones.c tests/tap.h
tests_test_kernel_clones_LDADD = $(BLAS_LIBS) -lm
# Backends are reached through their ops table only.
TESTS += tests/backend_rules.sh
EXTRA_DIST += tests/backend_rules.sh
check_PROGRAMS += tests/test_attention_fused
TESTS += tests/test_attention_fused
tests_test_attention_fused_SOURCES = tests/test_attention_fused.c tests/ref/ref.c tests/ref/ref.h tests/tap.h
tests_test_attention_fused_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_ring_kernels
TESTS += tests/test_ring_kernels
tests_test_ring_kernels_SOURCES = tests/test_ring_kernels.c tests/tap.h
tests_test_ring_kernels_LDADD = $(ND_TEST_LIBS)
