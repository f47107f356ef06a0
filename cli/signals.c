/* SIGINT, SIGTERM and SIGUSR1 during `ndgraph run`: the handler only notes
 * the signal; the loop finishes the step in flight, writes a checkpoint and
 * exits 130 / 143 (SIGUSR1: carries on). A second SIGINT stops at once: the
 * checkpoint being written stays a hidden temporary, removed at the next
 * start, and the last complete one is untouched. */
#include <signal.h>
#include <unistd.h>

#include "cli/commands.h"

static volatile sig_atomic_t pending;

static void on_signal(int sig) {
  if (sig == SIGINT && pending == SIGINT) _exit(130);
  /* a stop asked for is not downgraded to a checkpoint-and-continue */
  if (!(sig == SIGUSR1 && (pending == SIGINT || pending == SIGTERM))) pending = sig;
}

static const int caught[] = {SIGINT, SIGTERM, SIGUSR1};

void nd_cli_signals_block(int block) {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++) sigaddset(&set, caught[i]);
  pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

void nd_cli_signals_install(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++) sigaction(caught[i], &sa, NULL);
}

int nd_cli_signal_take(void) {
  int sig = pending;
  /* SIGINT and SIGTERM stay noted: a second SIGINT must still find its first */
  if (sig == SIGUSR1) pending = 0;
  return sig;
}
