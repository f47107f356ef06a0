# common: what every layer shares: error codes and messages, atomic files,
# reading a whole file, loading the machine's topology (hwloc), the names
# of the device kinds, kernels' row blocks shared with idle workers, text
# from input escaped for the terminal and for SVG, an SVG axis's ticks.
# Includes nothing from the other folders.
libndgraph_internal_la_SOURCES += common/error.c common/error.h common/atomic.c common/atomic.h common/file.c common/file.h common/hash.h \
	common/topology.c common/topology.h \
	common/device.c common/device.h \
	common/share.c common/share.h common/rope.h \
	common/escape.c common/escape.h common/svg.c common/svg.h
