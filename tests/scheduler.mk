# tests of scheduler, included by tests/local.mk.
