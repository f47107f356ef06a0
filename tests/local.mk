# tests: files of this folder, included by the top-level Makefile.am.
include tests/config.mk
include tests/kernels.mk
include tests/io.mk
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
