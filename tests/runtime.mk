# tests of runtime, included by tests/local.mk.
