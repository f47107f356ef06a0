/* What each process of an mpirun launch runs on, exchanged once at start:
 * its host, its hwloc topology in counts, and the workers StarPU started
 * there. Without mpirun: this process alone. */
#ifndef ND_TASKS_NODES_H
#define ND_TASKS_NODES_H

#include "common/error.h"
#include "ndgraph/ndgraph.h"

/* Every process describes itself and learns the others' (a collective on
 * the submitting thread, after StarPU started). */
int nd_nodes_exchange(nd_error *err);
/* Process p's description (p < nd_mpi_size()); NULL before the exchange. */
const nd_node_info *nd_nodes_get(int p);

#endif
