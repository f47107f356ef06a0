# Sourced by the tests that run ndgraph under mpirun (after tests/tap.sh):
# skips the test where there is no mpirun; otherwise Open MPI as root, over
# TCP on loopback, each process with one StarPU CPU worker, and `mpirun`,
# the launcher with those variables passed on.
if ! command -v mpirun >/dev/null; then
  echo "1..0 # SKIP no mpirun"
  exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
mpirun=(mpirun --oversubscribe -x STARPU_HOME -x STARPU_SILENT -x STARPU_NCPU -x STARPU_WORKERS_NOBIND)
