# examples: files of this folder, included by the top-level Makefile.am.
# The example kernel plugin, built by `make check` for tests/plugin.mk.
check_LTLIBRARIES = examples/plugins/libexample.la
examples_plugins_libexample_la_SOURCES = examples/plugins/example.c
examples_plugins_libexample_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
examples_plugins_libexample_la_LIBADD = -lm
EXTRA_DIST += examples/plugins/Makefile
