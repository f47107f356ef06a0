# Several processes under mpirun (docs/nodes.md), included by tests/local.mk;
# only in builds with StarPU-MPI.
if ND_MPI
TESTS += tests/test_nodes.sh tests/test_nodes_slices.sh tests/test_mpi_failures.sh tests/test_mpi_sigterm.sh tests/test_mpi_kill.sh \
	tests/test_mpi_dp_shard.sh tests/test_nodes_share.sh tests/test_mpi_dp_chunks.sh tests/test_nodes_trace.sh
endif
EXTRA_DIST += tests/test_nodes.sh tests/test_nodes_slices.sh tests/test_mpi_failures.sh tests/test_mpi_sigterm.sh tests/test_mpi_kill.sh \
	tests/test_mpi_dp_shard.sh tests/test_nodes_share.sh tests/test_mpi_dp_chunks.sh tests/test_nodes_trace.sh \
	tests/mpirun.sh
