# sim: the step simulator and the planner built on it (IR and configuration only, no StarPU).
libndgraph_internal_la_SOURCES += sim/sim.c sim/sim.h sim/sched.c sim/sched.h sim/calibration.c sim/calibration.h \
	sim/machine.c sim/machine.h sim/planner.c sim/planner.h sim/report.c \
	sim/cluster.c sim/cluster.h sim/cluster_cost.c sim/cluster_step.c sim/cluster_report.c
