# tests/cuda: what the build has (--version, CPU workers past 4), CUDA
# requests refused without a GPU, the plan on GPU topologies.
TESTS += tests/test_cuda_config.sh
EXTRA_DIST += tests/test_cuda_config.sh
# kernel-check of a plugin's CUDA kernel (examples/plugins/cuda_add.cu): skipped without a GPU
TESTS += tests/plugin_cuda.sh
EXTRA_DIST += tests/plugin_cuda.sh
if ND_CUDA
# the CUDA kernels against the CPU kernels: skipped here, run by scripts/gpu-check.sh
check_PROGRAMS += tests/test_cuda_kernels
TESTS += tests/test_cuda_kernels tests/test_cuda_build.sh
tests_test_cuda_kernels_SOURCES = tests/test_cuda_kernels.c tests/tap.h
tests_test_cuda_kernels_LDADD = $(ND_TEST_LIBS)
# NCCL all-reduces, direct and through StarPU, and runtime.tf32 on the handles: skipped here too
check_PROGRAMS += tests/test_cuda_nccl
TESTS += tests/test_cuda_nccl
tests_test_cuda_nccl_SOURCES = tests/test_cuda_nccl.c tests/tap.h
tests_test_cuda_nccl_LDADD = $(ND_TEST_LIBS)
endif
EXTRA_DIST += tests/test_cuda_kernels.c tests/test_cuda_nccl.c tests/test_cuda_build.sh
# the mixed CPU + GPU node against the CPU single-rank reference (the
# OpenCL parity test's source, built for a CUDA device)
check_PROGRAMS += tests/test_cuda_parity
TESTS += tests/test_cuda_parity
tests_test_cuda_parity_SOURCES = tests/test_device_parity.c tests/runtime/harness.h tests/tap.h
tests_test_cuda_parity_CPPFLAGS = $(AM_CPPFLAGS) -DND_TEST_CUDA
tests_test_cuda_parity_LDADD = $(ND_TEST_LIBS)
# the same for model.arch llama (RMSNorm, RoPE, SwiGLU, grouped-query
# attention on the GPU): the OpenCL Llama variant's source, built for CUDA
check_PROGRAMS += tests/test_cuda_parity_llama
TESTS += tests/test_cuda_parity_llama
tests_test_cuda_parity_llama_SOURCES = tests/test_opencl_parity_llama.c tests/runtime/harness.h tests/tap.h
tests_test_cuda_parity_llama_CPPFLAGS = $(AM_CPPFLAGS) -DND_TEST_CUDA
tests_test_cuda_parity_llama_LDADD = $(ND_TEST_LIBS)
# both under train.precision bf16: the casts, the bf16 GEMMs and the bf16
# stores on the GPU (the OpenCL bf16 test's source; Llama's of its own)
check_PROGRAMS += tests/test_cuda_parity_bf16 tests/test_cuda_parity_llama_bf16
TESTS += tests/test_cuda_parity_bf16 tests/test_cuda_parity_llama_bf16
tests_test_cuda_parity_bf16_SOURCES = tests/test_opencl_parity_bf16.c tests/runtime/harness.h tests/tap.h
tests_test_cuda_parity_bf16_CPPFLAGS = $(AM_CPPFLAGS) -DND_TEST_CUDA
tests_test_cuda_parity_bf16_LDADD = $(ND_TEST_LIBS)
tests_test_cuda_parity_llama_bf16_SOURCES = tests/test_cuda_parity_llama_bf16.c tests/runtime/harness.h tests/tap.h
tests_test_cuda_parity_llama_bf16_CPPFLAGS = $(AM_CPPFLAGS) -DND_TEST_CUDA
tests_test_cuda_parity_llama_bf16_LDADD = $(ND_TEST_LIBS)
