# tests of kernels, included by tests/local.mk.
