# tests of the runtime (training through StarPU), included by tests/local.mk.
check_PROGRAMS += tests/test_parity
TESTS += tests/test_parity
tests_test_parity_SOURCES = tests/test_parity.c tests/runtime/harness.h tests/tap.h
tests_test_parity_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_parity_llama
TESTS += tests/test_parity_llama
tests_test_parity_llama_SOURCES = tests/test_parity_llama.c tests/runtime/harness.h tests/tap.h
tests_test_parity_llama_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_parity_llama_tied
TESTS += tests/test_parity_llama_tied
tests_test_parity_llama_tied_SOURCES = tests/test_parity_llama_tied.c tests/runtime/harness.h tests/tap.h
tests_test_parity_llama_tied_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_parity_bf16
TESTS += tests/test_parity_bf16
tests_test_parity_bf16_SOURCES = tests/test_parity_bf16.c tests/runtime/harness.h tests/tap.h
tests_test_parity_bf16_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_parity_llama_bf16
TESTS += tests/test_parity_llama_bf16
tests_test_parity_llama_bf16_SOURCES = tests/test_parity_llama_bf16.c tests/runtime/harness.h tests/tap.h
tests_test_parity_llama_bf16_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_train
TESTS += tests/test_train
tests_test_train_SOURCES = tests/test_train.c tests/runtime/harness.h tests/tap.h
tests_test_train_LDADD = $(ND_TEST_LIBS)
TESTS += tests/test_quickstart.sh tests/test_bad_input.sh tests/test_finetune.sh tests/test_llama_tiny.sh tests/test_hf_llama.sh tests/test_torch_llama.sh \
	tests/test_signals.sh tests/test_reliability.sh tests/test_generate.sh tests/test_hf_generate.sh tests/test_sample_every.sh
# same seed, same bits with idle workers helping; then every bit-promising test under each OpenBLAS kernel set
TESTS += tests/test_determinism.sh tests/test_bits_coretypes.sh
EXTRA_DIST += tests/test_determinism.sh tests/test_bits_coretypes.sh
# train.precision: bf16 against fp32, the tf32 alias, bad values; bf16 against PyTorch's autocast
TESTS += tests/test_precision.sh tests/test_bf16_autocast.sh
EXTRA_DIST += tests/test_precision.sh tests/test_bf16_autocast.sh tests/bf16_autocast_ref.py
EXTRA_DIST += tests/tap.sh tests/test_quickstart.sh tests/test_bad_input.sh tests/test_finetune.sh tests/test_llama_tiny.sh \
	tests/test_hf_llama.sh tests/hf_llama_ref.py tests/test_torch_llama.sh tests/torch_llama_ref.py \
	tests/test_signals.sh tests/test_reliability.sh tests/test_generate.sh tests/test_hf_generate.sh tests/hf_generate_peer.py \
	tests/test_sample_every.sh
check_PROGRAMS += tests/test_memory
TESTS += tests/test_memory
tests_test_memory_SOURCES = tests/test_memory.c tests/runtime/harness.h tests/tap.h
tests_test_memory_LDADD = $(ND_TEST_LIBS)
# Two trainers (and a plan) in one process, one after the other and interleaved.
check_PROGRAMS += tests/test_trainers
TESTS += tests/test_trainers
tests_test_trainers_SOURCES = tests/test_trainers.c tests/runtime/harness.h tests/tap.h
tests_test_trainers_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_forward
TESTS += tests/test_forward
tests_test_forward_SOURCES = tests/test_forward.c tests/runtime/harness.h tests/tap.h
tests_test_forward_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_llama_ref
TESTS += tests/test_llama_ref
tests_test_llama_ref_SOURCES = tests/test_llama_ref.c tests/ref/llama.c tests/ref/llama.h tests/ref/ref.c \
	tests/ref/ref.h tests/runtime/harness.h tests/tap.h
tests_test_llama_ref_LDADD = $(ND_TEST_LIBS)

check_PROGRAMS += tests/test_recompute
TESTS += tests/test_recompute
tests_test_recompute_SOURCES = tests/test_recompute.c tests/runtime/harness.h tests/tap.h
tests_test_recompute_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_context_parallel
TESTS += tests/test_context_parallel
tests_test_context_parallel_SOURCES = tests/test_context_parallel.c tests/runtime/harness.h tests/tap.h
tests_test_context_parallel_LDADD = $(ND_TEST_LIBS)
