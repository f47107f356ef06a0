# tests of plugin, included by tests/local.mk.
