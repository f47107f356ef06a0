# tests of trace, included by tests/local.mk.
