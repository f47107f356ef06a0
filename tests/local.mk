# tests: files of this folder, included by the top-level Makefile.am.
include tests/config.mk
include tests/kernels.mk
include tests/io.mk
include tests/text.mk
include tests/graph.mk
include tests/runtime.mk
include tests/trace.mk
include tests/plugin.mk
include tests/scheduler.mk
include tests/opencl.mk
include tests/cli.mk
include tests/layers.mk
include tests/reliability.mk
include tests/nodes.mk
include tests/cuda.mk

# The suite's own StarPU home (task models, bus model), so that a run does
# not depend on, or change, the user's; its bus model is written once, here,
# before the tests start two at a time and read it.
ND_TEST_STARPU_HOME = $(abs_top_builddir)/tests/starpu-home
AM_TESTS_ENVIRONMENT += export STARPU_HOME='$(ND_TEST_STARPU_HOME)';
check_PROGRAMS += tests/calibrate_bus
tests_calibrate_bus_SOURCES = tests/calibrate_bus.c
tests_calibrate_bus_LDADD = $(ND_TEST_LIBS)
# run before every check (not a stamp), so that a home emptied since is measured again
check_DATA = calibrate-starpu-bus
.PHONY: calibrate-starpu-bus
calibrate-starpu-bus: tests/calibrate_bus$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) tests/starpu-home && STARPU_HOME='$(ND_TEST_STARPU_HOME)' STARPU_SILENT=1 tests/calibrate_bus
clean-local:
	rm -rf tests/starpu-home
