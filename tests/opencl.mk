# tests of the OpenCL backend, included by tests/local.mk. Each reports
# itself skipped where no OpenCL device exists.
check_PROGRAMS += tests/test_opencl_kernels
TESTS += tests/test_opencl_kernels
tests_test_opencl_kernels_SOURCES = tests/test_opencl_kernels.c tests/tap.h
tests_test_opencl_kernels_LDADD = $(ND_TEST_LIBS)
TESTS += tests/test_opencl_bad.sh tests/test_device_trial.sh tests/test_chain_device.sh
EXTRA_DIST += tests/test_opencl_bad.sh tests/test_device_trial.sh tests/test_chain_device.sh
check_PROGRAMS += tests/test_opencl_parity
TESTS += tests/test_opencl_parity
tests_test_opencl_parity_SOURCES = tests/test_device_parity.c tests/runtime/harness.h tests/tap.h
tests_test_opencl_parity_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_opencl_parity_bf16
TESTS += tests/test_opencl_parity_bf16
tests_test_opencl_parity_bf16_SOURCES = tests/test_opencl_parity_bf16.c tests/runtime/harness.h tests/tap.h
tests_test_opencl_parity_bf16_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_opencl_parity_llama
TESTS += tests/test_opencl_parity_llama
tests_test_opencl_parity_llama_SOURCES = tests/test_opencl_parity_llama.c tests/runtime/harness.h tests/tap.h
tests_test_opencl_parity_llama_LDADD = $(ND_TEST_LIBS)
# A plugin's OpenCL kernel: kernel-check on the device, a mixed-node training.
check_PROGRAMS += tests/test_plugin_opencl
TESTS += tests/test_plugin_opencl tests/plugin_opencl.sh
EXTRA_DIST += tests/plugin_opencl.sh
tests_test_plugin_opencl_SOURCES = tests/test_plugin_opencl.c tests/runtime/harness.h tests/tap.h
tests_test_plugin_opencl_LDADD = $(ND_TEST_LIBS)
