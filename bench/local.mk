# bench: files of this folder, included by the top-level Makefile.am.
# bench/schedule: every policy on the same pipeline graph (docs/scheduler.md).
noinst_PROGRAMS += bench/schedule
bench_schedule_SOURCES = bench/schedule.c
bench_schedule_LDADD = $(ND_TEST_LIBS)
