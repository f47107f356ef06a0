# tasks: IR -> StarPU codelets (one generic codelet per kind) and data handles, submission,
# and where the scheduler meets the executor (schedule.c, placement_report.c).
libndgraph_internal_la_SOURCES += tasks/codelets.h tasks/codelets.c tasks/exec.h tasks/exec.c tasks/runtime.c \
	tasks/schedule.c tasks/schedule.h tasks/placement_report.c tasks/build_info.c \
	tasks/collective.h tasks/collective.c tasks/forward.h tasks/forward.c tasks/chain.h tasks/chain.c

# Several processes: StarPU-MPI when configure found it, else one process.
libndgraph_internal_la_SOURCES += tasks/mpi.h tasks/mpi_plan.c tasks/nodes.h tasks/nodes.c
if ND_MPI
libndgraph_internal_la_SOURCES += tasks/mpi.c
else
libndgraph_internal_la_SOURCES += tasks/mpi_none.c
endif
