/* How long the launcher leaves the processes after passing SIGTERM on,
 * before it kills them (docs/nodes.md, *Stopping under a batch scheduler*):
 * the time a checkpoint has to be written when the job is stopped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"

/* Open MPI 4.1's mpirun SIGKILLs 1 s after its SIGTERM unless
 * odls_base_sigkill_timeout says otherwise; SLURM waits KillWait (30 s by
 * default, slurm.conf), which the job cannot read. */
#define OMPI_VAR "OMPI_MCA_odls_base_sigkill_timeout"

nd_cli_grace nd_cli_stop_grace(void) {
  if (getenv("OMPI_COMM_WORLD_SIZE")) {
    const char *v = getenv(OMPI_VAR);
    char *end;
    double s = v ? strtod(v, &end) : 1;
    if (!v || end == v || *end || !isfinite(s) || s < 0) s = 1;
    return (nd_cli_grace){s, OMPI_VAR, "mpirun"};
  }
  if (getenv("SLURM_JOB_ID")) return (nd_cli_grace){30, "KillWait (slurm.conf)", "SLURM"};
  return (nd_cli_grace){0, NULL, NULL};
}

void nd_cli_grace_note(nd_cli_grace g, double need_bytes) {
  if (!g.setting) return;
  printf("%s: after SIGTERM the processes have %g s to write their checkpoint (about %.0f MB) before they are killed; "
         "%s sets it\n",
         g.launcher, g.seconds, need_bytes / 1e6, g.setting);
}

void nd_cli_grace_check(nd_cli_grace g, long long step, double took_s) {
  static int warned;
  if (!g.setting || took_s <= g.seconds || warned++) return;
  double enough = ceil(fmax(3 * took_s, took_s + 5));
  fprintf(stderr,
          "ndgraph: warning: the checkpoint of step %lld took %.1f s, more than the %g s %s leaves after SIGTERM: a "
          "stop would kill the processes before it is written; set %s to %.0f or more (docs/nodes.md)\n",
          step, took_s, g.seconds, g.launcher, g.setting, enough);
}
