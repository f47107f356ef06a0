# tests of graph, included by tests/local.mk.
check_PROGRAMS += tests/test_graph
TESTS += tests/test_graph
tests_test_graph_SOURCES = tests/test_graph.c tests/tap.h
tests_test_graph_LDADD = $(ND_TEST_LIBS)
# The task-kind table against the graph, the CPU backend and docs/kernels.md.
check_PROGRAMS += tests/test_kinds
TESTS += tests/test_kinds
tests_test_kinds_SOURCES = tests/test_kinds.c tests/runtime/harness.h tests/tap.h
tests_test_kinds_LDADD = $(ND_TEST_LIBS)
# the step simulator (sim/) on hand-built graphs, and plan --auto
check_PROGRAMS += tests/test_sim
TESTS += tests/test_sim tests/test_planner.sh tests/test_plan_input.sh tests/test_context_parallel.sh
tests_test_sim_SOURCES = tests/test_sim.c tests/tap.h
tests_test_sim_LDADD = $(ND_TEST_LIBS)
check_PROGRAMS += tests/test_calstats
TESTS += tests/test_calstats
tests_test_calstats_SOURCES = tests/test_calstats.c tests/tap.h
tests_test_calstats_LDADD = $(ND_TEST_LIBS)
EXTRA_DIST += tests/test_planner.sh tests/test_plan_input.sh tests/test_context_parallel.sh configs/calibration-8gpu.json bench/planner \
	bench/planner-spread
# plan --auto under runtime.device_memory: sharded or recomputed layouts that fit, and run under it
TESTS += tests/test_plan_memory.sh
EXTRA_DIST += tests/test_plan_memory.sh bench/memory
# plan --auto and context parallelism: a cp column, cp > 1 where long sequences bind, untimed rings left out
TESTS += tests/test_plan_context.sh
EXTRA_DIST += tests/test_plan_context.sh
check_PROGRAMS += tests/test_limits
TESTS += tests/test_limits
tests_test_limits_SOURCES = tests/test_limits.c tests/tap.h
tests_test_limits_LDADD = $(ND_TEST_LIBS)
# fused attention: the plan's activation bytes have no T^2 part
check_PROGRAMS += tests/test_attention_memory
TESTS += tests/test_attention_memory
tests_test_attention_memory_SOURCES = tests/test_attention_memory.c tests/tap.h
tests_test_attention_memory_LDADD = $(ND_TEST_LIBS)
# one process's share under mpirun, built alone, against the whole step (docs/nodes.md)
check_PROGRAMS += tests/test_mpi_share
TESTS += tests/test_mpi_share tests/test_plan_share.sh tests/test_dp_ring.sh
EXTRA_DIST += tests/test_plan_share.sh tests/test_dp_ring.sh
tests_test_mpi_share_SOURCES = tests/test_mpi_share.c tests/share_config.h tests/tap.h
tests_test_mpi_share_LDADD = $(ND_TEST_LIBS)
# the cluster simulator: cluster files, roofline and collective costs, plan --cluster, bench/megatron's rows
check_PROGRAMS += tests/test_cluster
TESTS += tests/test_cluster tests/test_cluster.sh
tests_test_cluster_SOURCES = tests/test_cluster.c tests/tap.h
tests_test_cluster_LDADD = $(ND_TEST_LIBS)
EXTRA_DIST += tests/test_cluster.sh bench/megatron configs/clusters/dgx-a100.yaml configs/clusters/dgx-h100.yaml
check_PROGRAMS += tests/test_stage_share
TESTS += tests/test_stage_share
tests_test_stage_share_SOURCES = tests/test_stage_share.c tests/share_config.h tests/tap.h
tests_test_stage_share_LDADD = $(ND_TEST_LIBS)
