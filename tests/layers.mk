# Structure: the include rules between folders (graph/ needs no kernels/,
# cli/ only the public headers, ...), included by tests/local.mk.
TESTS += tests/test_layers.sh
EXTRA_DIST += tests/test_layers.sh
# What libndgraph.so exports: the public API only.
TESTS += tests/test_exports.sh
EXTRA_DIST += tests/test_exports.sh
