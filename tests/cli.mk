# tests of the command line as a whole, included by tests/local.mk.
# Exit statuses: one table for every command (the bad plugins are tests/plugin.mk's).
TESTS += tests/test_exit_status.sh
EXTRA_DIST += tests/test_exit_status.sh
