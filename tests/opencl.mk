# tests of the OpenCL backend, included by tests/local.mk. Each reports
# itself skipped where no OpenCL device exists.
check_PROGRAMS += tests/test_opencl_kernels
TESTS += tests/test_opencl_kernels
tests_test_opencl_kernels_SOURCES = tests/test_opencl_kernels.c tests/tap.h
tests_test_opencl_kernels_LDADD = $(ND_TEST_LIBS)
TESTS += tests/test_opencl_bad.sh
EXTRA_DIST += tests/test_opencl_bad.sh
check_PROGRAMS += tests/test_opencl_parity
TESTS += tests/test_opencl_parity
tests_test_opencl_parity_SOURCES = tests/test_opencl_parity.c tests/runtime/harness.h tests/tap.h
tests_test_opencl_parity_LDADD = $(ND_TEST_LIBS)
