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
