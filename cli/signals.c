/* SIGINT, SIGTERM, SIGPIPE and SIGUSR1 during `ndgraph run`: the handler
 * only notes the signal; the loop finishes the step in flight, writes a
 * checkpoint and exits 130 / 143 / 141 (SIGUSR1: carries on). SIGPIPE is a
 * closed standard output (`ndgraph run | head`), which would otherwise kill
 * the run and its unsaved steps. A second SIGINT stops at once: the
 * checkpoint being written stays a hidden temporary, removed at the next
 * start, and the last complete one is untouched. */
#include <signal.h>
#include <unistd.h>

#include "cli/commands.h"

static volatile sig_atomic_t pending;

static void on_signal(int sig) {
  if (sig == SIGINT && pending == SIGINT) _exit(130);
  /* a stop the user asked for is not downgraded to a checkpoint-and-continue,
   * nor renamed by the broken pipe its own messages may cause */
  int asked = pending == SIGINT || pending == SIGTERM;
  if (!((sig == SIGUSR1 && (asked || pending == SIGPIPE)) || (sig == SIGPIPE && asked))) pending = sig;
}

static const int caught[] = {SIGINT, SIGTERM, SIGUSR1, SIGPIPE};

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
  /* the stops stay noted: a second SIGINT must still find its first */
  if (sig == SIGUSR1) pending = 0;
  return sig;
}
