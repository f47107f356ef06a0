# tests of io, included by tests/local.mk.
