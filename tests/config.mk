# tests of config, included by tests/local.mk.
