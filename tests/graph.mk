# tests of graph, included by tests/local.mk.
