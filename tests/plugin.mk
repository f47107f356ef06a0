# tests of kernel plugins, included by tests/local.mk.
# Broken plugins, one per case of tests/plugins/bad.c (the example plugin is
# built by examples/local.mk).
ND_BAD_PLUGIN_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
check_LTLIBRARIES += tests/plugins/libbad_abi.la tests/plugins/libbad_kind.la tests/plugins/libbad_dup.la \
	tests/plugins/libbad_fail.la tests/plugins/libbad_backward.la tests/plugins/libbad_sloppy.la tests/plugins/libno_entry.la \
	tests/plugins/libdata_entry.la tests/plugins/libexample_v1.la tests/plugins/libold_attention.la
# The example plugin as built against kernel ABI version 1: it still loads.
tests_plugins_libexample_v1_la_SOURCES = examples/plugins/example.c
tests_plugins_libexample_v1_la_CPPFLAGS = $(AM_CPPFLAGS) -DND_KERNEL_ABI_VERSION=1
tests_plugins_libexample_v1_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libexample_v1_la_LIBADD = -lm
tests_plugins_libbad_abi_la_SOURCES = tests/plugins/bad.c
tests_plugins_libbad_abi_la_CPPFLAGS = $(AM_CPPFLAGS) -DND_KERNEL_ABI_VERSION=99
tests_plugins_libbad_abi_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libold_attention_la_SOURCES = tests/plugins/bad.c
tests_plugins_libold_attention_la_CPPFLAGS = $(AM_CPPFLAGS) -DOLD_ATTENTION -DND_KERNEL_ABI_VERSION=2
tests_plugins_libold_attention_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libbad_kind_la_SOURCES = tests/plugins/bad.c
tests_plugins_libbad_kind_la_CPPFLAGS = $(AM_CPPFLAGS) -DBAD_KIND
tests_plugins_libbad_kind_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libbad_dup_la_SOURCES = tests/plugins/bad.c
tests_plugins_libbad_dup_la_CPPFLAGS = $(AM_CPPFLAGS) -DBAD_DUP
tests_plugins_libbad_dup_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libbad_fail_la_SOURCES = tests/plugins/bad.c
tests_plugins_libbad_fail_la_CPPFLAGS = $(AM_CPPFLAGS) -DBAD_FAIL
tests_plugins_libbad_fail_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libbad_backward_la_SOURCES = tests/plugins/bad.c
tests_plugins_libbad_backward_la_CPPFLAGS = $(AM_CPPFLAGS) -DBAD_BACKWARD
tests_plugins_libbad_backward_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libbad_sloppy_la_SOURCES = tests/plugins/bad.c
tests_plugins_libbad_sloppy_la_CPPFLAGS = $(AM_CPPFLAGS) -DBAD_SLOPPY
tests_plugins_libbad_sloppy_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libno_entry_la_SOURCES = tests/plugins/bad.c
tests_plugins_libno_entry_la_CPPFLAGS = $(AM_CPPFLAGS) -DNO_ENTRY
tests_plugins_libno_entry_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libdata_entry_la_SOURCES = tests/plugins/bad.c
tests_plugins_libdata_entry_la_CPPFLAGS = $(AM_CPPFLAGS) -DDATA_ENTRY
tests_plugins_libdata_entry_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)

# Plugins that take their process down, one per case of tests/plugins/fault.c.
check_LTLIBRARIES += tests/plugins/libfault_ctor.la tests/plugins/libfault_init.la tests/plugins/libfault_segv.la tests/plugins/libfault_abort.la tests/plugins/libfault_heap.la tests/plugins/libfault_spin.la tests/plugins/libfault_exit.la tests/plugins/libfault_late_segv.la tests/plugins/libfault_late_exit.la tests/plugins/libfault_cost_neg.la tests/plugins/libfault_cost_max.la
tests_plugins_libfault_ctor_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_ctor_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_CTOR
tests_plugins_libfault_ctor_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_init_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_init_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_INIT
tests_plugins_libfault_init_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_segv_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_segv_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_SEGV
tests_plugins_libfault_segv_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_abort_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_abort_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_ABORT
tests_plugins_libfault_abort_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_heap_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_heap_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_HEAP
tests_plugins_libfault_heap_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_spin_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_spin_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_SPIN
tests_plugins_libfault_spin_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_exit_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_exit_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_EXIT
tests_plugins_libfault_exit_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_late_segv_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_late_segv_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_LATE_SEGV
tests_plugins_libfault_late_segv_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_late_exit_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_late_exit_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_LATE_EXIT
tests_plugins_libfault_late_exit_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_cost_neg_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_cost_neg_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_COST_NEG
tests_plugins_libfault_cost_neg_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)
tests_plugins_libfault_cost_max_la_SOURCES = tests/plugins/fault.c
tests_plugins_libfault_cost_max_la_CPPFLAGS = $(AM_CPPFLAGS) -DFAULT_COST_MAX
tests_plugins_libfault_cost_max_la_LDFLAGS = $(ND_BAD_PLUGIN_LDFLAGS)

# Losses with the example plugin against the built-in path and a test-local SiLU.
check_PROGRAMS += tests/test_plugin
TESTS += tests/test_plugin
tests_test_plugin_SOURCES = tests/test_plugin.c tests/runtime/harness.h tests/tap.h
tests_test_plugin_LDADD = $(ND_TEST_LIBS)

# The command line: plan's kernels section, kernel-check, every bad plugin.
TESTS += tests/plugin.sh
EXTRA_DIST += tests/plugin.sh
# A plugin built against kernel ABI version 1 still loads.
TESTS += tests/plugin_abi.sh
EXTRA_DIST += tests/plugin_abi.sh
# Plugins that crash, abort, hang or exit, at the start-up probe, in kernel-check
# and in the run; cost models out of range.
TESTS += tests/plugin_faults.sh
EXTRA_DIST += tests/plugin_faults.sh
