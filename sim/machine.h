/* The machine to plan for, as the simulator describes it. */
#ifndef ND_SIM_MACHINE_H
#define ND_SIM_MACHINE_H

#include "configs/config.h"
#include "sim/calibration.h"
#include "sim/sim.h"

/* runtime.topology's GPUs (one GPU worker and memory node each) when it has
 * any; else the CPU workers and runtime.opencl_devices of this machine (or
 * of the topology's cores), as the runtime starts them. */
int nd_sim_machine_from(const nd_config *cfg, const nd_calibration *cal, nd_sim_machine *m, nd_error *err);
/* parallelism.auto: run trains on this machine, so a runtime.topology whose
 * workers are not this machine's (a plan for them would pick their layout)
 * is refused in one line (ND_ECONFIG); 0 when it has the same workers, or none. */
int nd_sim_machine_check_here(const nd_config *cfg, nd_error *err);
/* Releases the topology nd_sim_machine_from keeps (the workers' objects). */
void nd_sim_machine_free(nd_sim_machine *m);

#endif
