# examples: files of this folder, included by the top-level Makefile.am.
# The example kernel plugin, built by `make check` for tests/plugin.mk.
check_LTLIBRARIES = examples/plugins/libexample.la
examples_plugins_libexample_la_SOURCES = examples/plugins/example.c
examples_plugins_libexample_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
examples_plugins_libexample_la_LIBADD = -lm
EXTRA_DIST += examples/plugins/Makefile
# The OpenCL example plugin (a residual add for the CPU and OpenCL), for tests/opencl.mk.
if ND_OPENCL
check_LTLIBRARIES += examples/plugins/libopencl_add.la
examples_plugins_libopencl_add_la_SOURCES = examples/plugins/opencl_add.c
examples_plugins_libopencl_add_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
examples_plugins_libopencl_add_la_LIBADD = $(OPENCL_LIBS) -lpthread -lm
endif
# The CUDA example plugin (a residual add for the CPU and CUDA), for tests/cuda.mk:
# nvcc builds its one object (the .cu.lo rule of kernels/cuda/local.mk).
EXTRA_DIST += examples/plugins/cuda_add.cu
if ND_CUDA
check_LTLIBRARIES += examples/plugins/libcuda_add.la
examples_plugins_libcuda_add_la_SOURCES =
examples_plugins_libcuda_add_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
examples_plugins_libcuda_add_la_LIBADD = examples/plugins/cuda_add.lo $(CUDA_LIBS)
EXTRA_examples_plugins_libcuda_add_la_DEPENDENCIES = examples/plugins/cuda_add.lo
CLEANFILES += examples/plugins/cuda_add.lo examples/plugins/cuda_add.o
endif
