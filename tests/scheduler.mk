# tests of scheduler, included by tests/local.mk.
check_PROGRAMS += tests/test_ndws_stress
TESTS += tests/test_ndws_stress
tests_test_ndws_stress_SOURCES = tests/test_ndws_stress.c tests/ndws_start.h tests/tap.h
tests_test_ndws_stress_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_hints
TESTS += tests/test_hints
tests_test_hints_SOURCES = tests/test_hints.c tests/runtime/harness.h tests/tap.h
tests_test_hints_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_placement
TESTS += tests/test_placement
tests_test_placement_SOURCES = tests/test_placement.c tests/tap.h
tests_test_placement_LDADD = $(ND_TEST_LIBS)
EXTRA_DIST += tests/topologies
check_PROGRAMS += tests/test_sched_parity
TESTS += tests/test_sched_parity
tests_test_sched_parity_SOURCES = tests/test_sched_parity.c tests/runtime/harness.h tests/tap.h
tests_test_sched_parity_LDADD = $(ND_TEST_LIBS)
# chains of tasks submitted as one StarPU task (tasks/chain.h)
check_PROGRAMS += tests/test_chain
TESTS += tests/test_chain
tests_test_chain_SOURCES = tests/test_chain.c tests/runtime/harness.h tests/tap.h
tests_test_chain_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_fixed_order
TESTS += tests/test_fixed_order
tests_test_fixed_order_SOURCES = tests/test_fixed_order.c tests/runtime/harness.h tests/tap.h
tests_test_fixed_order_LDADD = $(ND_TEST_LIBS)
# the global order of collectives on devices (NCCL's), on CPU workers
check_PROGRAMS += tests/test_coll_order
TESTS += tests/test_coll_order
tests_test_coll_order_SOURCES = tests/test_coll_order.c tests/tap.h
tests_test_coll_order_LDADD = $(ND_TEST_LIBS)
# bench/schedule on its smallest grid: its rows, references and refusals
TESTS += tests/test_bench_schedule.sh
EXTRA_DIST += tests/test_bench_schedule.sh
# bench/mixed-node's refusals of bad arguments
TESTS += tests/test_bench_mixed_node.sh
EXTRA_DIST += tests/test_bench_mixed_node.sh
# runtime.wait_policy: when idle workers of ndgraph's policies sleep (scheduler/idle.h)
check_PROGRAMS += tests/test_idle_wait
TESTS += tests/test_idle_wait
tests_test_idle_wait_SOURCES = tests/test_idle_wait.c tests/ndws_start.h tests/tap.h
tests_test_idle_wait_LDADD = $(ND_TEST_LIBS)
# bench/generate on its smallest run, and its refusals of bad arguments
TESTS += tests/test_bench_generate.sh
EXTRA_DIST += tests/test_bench_generate.sh
# the benchmarks' paired ratios and their confidence interval (bench/paired.h)
check_PROGRAMS += tests/test_bench_paired
TESTS += tests/test_bench_paired
tests_test_bench_paired_SOURCES = tests/test_bench_paired.c bench/paired.c bench/paired.h tests/tap.h
tests_test_bench_paired_LDADD = -lm
# the planner simulates the placement that runs: plan --auto's layouts placed by the simulator and by run
check_PROGRAMS += tests/test_shared_placement
TESTS += tests/test_shared_placement
tests_test_shared_placement_SOURCES = tests/test_shared_placement.c tests/runtime/harness.h tests/tap.h
tests_test_shared_placement_LDADD = $(ND_TEST_LIBS)
