/* SIGINT, SIGTERM, SIGHUP, SIGPIPE and SIGUSR1 during `ndgraph run`: the
 * handler only notes the signal; the loop finishes the step in flight, writes
 * a checkpoint and exits 130 / 143 / 129 / 141 (SIGUSR1: carries on). SIGHUP
 * is a closed terminal (an ssh session that drops) and SIGPIPE a closed
 * standard output (`ndgraph run | head`): either would otherwise kill the run
 * and its unsaved steps. A SIGHUP ignored when the run starts (`nohup`) stays
 * ignored. A second SIGINT stops at once, with one line on stderr: the
 * checkpoint being written stays a hidden temporary, removed at the next
 * start, and the last complete one, which the line names, is untouched. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/commands.h"

static volatile sig_atomic_t pending;

/* The line a second SIGINT prints, made outside the handler (which may only
 * write it): two buffers, the one in use never rewritten, said_at naming it
 * (-1: nothing to say, a process that does not speak for the job). */
static char said[2][4400]; /* train.save_dir (cli/run.c keeps 4200 bytes) and the words */
static size_t said_len[2];
static volatile sig_atomic_t said_at = -1;

void nd_cli_signals_saved(const char *save_dir, long long step) {
  int next = said_at == 0;
  int n = !save_dir[0]
              ? snprintf(said[next], sizeof said[next],
                         "ndgraph: a second SIGINT: stopped at once; nothing saved (train.save_dir is empty)\n")
          : step > 0 ? snprintf(said[next], sizeof said[next],
                                "ndgraph: a second SIGINT: stopped at once, the checkpoint the first asked for "
                                "abandoned; the last complete one, %s/step-%lld, is intact\n",
                                save_dir, step)
                     : snprintf(said[next], sizeof said[next],
                                "ndgraph: a second SIGINT: stopped at once, the checkpoint the first asked for "
                                "abandoned; %s holds no complete one\n",
                                save_dir);
  said_len[next] = n < 0 ? 0 : (size_t)n < sizeof said[next] ? (size_t)n : sizeof said[next] - 1;
  said_at = next;
}

static void on_signal(int sig) {
  if (sig == SIGINT && pending == SIGINT) {
    int at = said_at;
    if (at >= 0 && write(STDERR_FILENO, said[at], said_len[at]) < 0) _exit(130);
    _exit(130);
  }
  /* a stop the user asked for is not downgraded to a checkpoint-and-continue,
   * nor renamed by the broken pipe its own messages may cause */
  int asked = pending == SIGINT || pending == SIGTERM || pending == SIGHUP;
  if (!((sig == SIGUSR1 && (asked || pending == SIGPIPE)) || (sig == SIGPIPE && asked))) pending = sig;
}

static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGPIPE};
#define N_CAUGHT (sizeof caught / sizeof caught[0])
static sigset_t ours; /* the caught signals but an ignored SIGHUP */

void nd_cli_signals_hold(void) {
  sigemptyset(&ours);
  for (size_t i = 0; i < N_CAUGHT; i++) {
    struct sigaction was;
    if (sigaction(caught[i], NULL, &was) != 0) continue;
    /* looked at now: the runtime's own handlers replace SIG_IGN */
    if (caught[i] == SIGHUP && was.sa_handler == SIG_IGN) continue;
    sigaddset(&ours, caught[i]);
  }
  pthread_sigmask(SIG_BLOCK, &ours, NULL);
  /* a signal inherited as ignored (a shell starts a background job with
   * SIGINT ignored) is dropped when sent, blocked or not: default, and
   * blocked, it waits for our handler instead */
  for (size_t i = 0; i < N_CAUGHT; i++) {
    struct sigaction was;
    if (sigismember(&ours, caught[i]) == 1 && sigaction(caught[i], NULL, &was) == 0 && was.sa_handler == SIG_IGN)
      signal(caught[i], SIG_DFL);
  }
}

void nd_cli_signals_catch(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < N_CAUGHT; i++)
    if (sigismember(&ours, caught[i]) == 1) sigaction(caught[i], &sa, NULL);
  pthread_sigmask(SIG_UNBLOCK, &ours, NULL);
}

int nd_cli_signal_take(void) {
  int sig = pending;
  /* the stops stay noted: a second SIGINT must still find its first */
  if (sig == SIGUSR1) pending = 0;
  return sig;
}
