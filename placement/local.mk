# placement: ranks onto units and each task's home and allowed units, shared
# by the scheduler and the simulator (graph, configuration and hwloc only, no
# StarPU); included by the top-level Makefile.am.
libndgraph_internal_la_SOURCES += \
	placement/topology.c placement/topology.h \
	placement/placement.c placement/placement.h \
	placement/homes.c placement/homes.h
