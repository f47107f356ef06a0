/* The one mapping from error codes to exit statuses, used by every command.
 * The README's rule: 0 on success, 2 on bad input (usage, configuration),
 * 1 on a failure while running (data, checkpoint, non-finite loss). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

/* Bad input is what the user asked for: the configuration, the plugins it
 * names, devices that do not exist, a feature this build lacks, arguments
 * the library refuses. Everything else happens while running. */
static const struct {
  int code, status;
} statuses[] = {
    {ND_ECONFIG, ND_EXIT_BAD_INPUT}, {ND_EINVAL, ND_EXIT_BAD_INPUT},   {ND_EPLUGIN, ND_EXIT_BAD_INPUT},
    {ND_ENODEV, ND_EXIT_BAD_INPUT},  {ND_ENOTIMPL, ND_EXIT_BAD_INPUT}, {ND_ENOMEM, ND_EXIT_FAILURE},
    {ND_EIO, ND_EXIT_FAILURE},       {ND_EDATA, ND_EXIT_FAILURE},      {ND_ECHECKPOINT, ND_EXIT_FAILURE},
    {ND_ERUNTIME, ND_EXIT_FAILURE},  {ND_ENUMERIC, ND_EXIT_FAILURE},
};

int nd_cli_status(int rc) {
  if (rc == 0) return 0;
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
    if (statuses[i].code == rc) return statuses[i].status;
  return ND_EXIT_FAILURE;
}

/* "FILE:LINE:COL: error: ..." (a configuration value found wrong after
 * loading, configs/config.h): printed as the loader prints its own */
static int positioned(const char *msg) {
  const char *e = strstr(msg, ": error: "), *p = e;
  int fields = 0;
  while (p && p > msg && fields < 2) {
    const char *q = p;
    while (q > msg && isdigit((unsigned char)q[-1])) q--;
    if (q == p || q == msg || q[-1] != ':') return 0;
    p = q - 1, fields++;
  }
  return fields == 2;
}

int nd_cli_fail(int rc, const nd_error *err) {
  const char *msg = err && err->msg[0] ? err->msg : nd_strerror(rc);
  fprintf(stderr, "%s%s\n", positioned(msg) ? "" : "ndgraph: ", msg);
  return nd_cli_status(rc);
}
