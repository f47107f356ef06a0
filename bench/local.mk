# bench: files of this folder, included by the top-level Makefile.am.
# bench/schedule: every policy on the same pipeline graph (docs/scheduler.md).
noinst_PROGRAMS += bench/schedule
bench_schedule_SOURCES = bench/schedule.c bench/run.c bench/run.h bench/paired.c bench/paired.h
bench_schedule_LDADD = $(ND_TEST_LIBS)
# bench/mixed-node: a CPU worker beside an OpenCL device (docs/opencl.md).
noinst_PROGRAMS += bench/mixed-node
bench_mixed_node_SOURCES = bench/mixed_node.c bench/run.c bench/run.h bench/paired.c bench/paired.h
bench_mixed_node_LDADD = $(ND_TEST_LIBS)
# bench/nodes: one process against two under mpirun, and tasks per process from the plan (docs/nodes.md).
EXTRA_DIST += bench/nodes
# bench/submit: what one StarPU task costs the submitting thread (docs/nodes.md, Submission).
noinst_PROGRAMS += bench/submit
bench_submit_SOURCES = bench/submit.c
bench_submit_LDADD = $(ND_TEST_LIBS)
# bench/generate: a new token's time against the prompt's length, with and without the key/value cache (docs/generate.md).
noinst_PROGRAMS += bench/generate
bench_generate_SOURCES = bench/generate.c bench/run.c bench/run.h bench/paired.c bench/paired.h
bench_generate_LDADD = $(ND_TEST_LIBS)
