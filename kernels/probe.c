/* Plugin code run first in a child process: the child announces each stage
 * (loading a plugin, its init, each kernel call) through a pipe and ends
 * with its result; the parent waits at most the timeout for each message.
 * A child that dies names its last stage, which a signal handler inside the
 * child could not do safely for every fault (a corrupted heap, a hang). */
#include "kernels/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"

/* One message of the child: smaller than PIPE_BUF, so that a write is whole. */
enum { STAGE, RESULT };
typedef struct message {
  int type, rc;
  char text[ND_ERROR_MAX - 2 * sizeof(int)];
} message;

static int channel = -1; /* the child's end of the pipe; -1 outside a probe */

static void send_message(int type, int rc, const char *text) {
  message m = {type, rc, ""};
  snprintf(m.text, sizeof m.text, "%s", text);
  while (write(channel, &m, sizeof m) < 0 && errno == EINTR) {}
}

void nd__probe_stage(const char *fmt, ...) {
  if (channel < 0) return;
  fflush(NULL); /* what the stages before printed survives this one's crash */
  char text[sizeof((message *)0)->text];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  send_message(STAGE, 0, text);
}

/* A plugin's exit() in the child ends it with its status at once: the
 * parent's exit handlers (MPI's abort of the job) are not the child's. */
static void leave_now(int status, void *arg) {
  (void)arg;
  _exit(status);
}

static _Noreturn void child(int fd, int (*body)(const void *arg, nd_error *err), const void *arg) {
  channel = fd;
  on_exit(leave_now, NULL);
  nd_error err = {0};
  int rc = body(arg, &err);
  fflush(NULL);
  send_message(RESULT, rc, err.msg);
  _exit(0);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads the child's messages until it closes the pipe (0) or stays silent
 * past the timeout (1). */
static int listen_to(int fd, int timeout_s, message *stage, message *result) {
  double deadline = now() + timeout_s;
  message m;
  size_t have = 0;
  for (;;) {
    double left = deadline - now();
    if (left <= 0) return 1;
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, (int)(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return 1;
    ssize_t r = read(fd, (char *)&m + have, sizeof m - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    if ((have += (size_t)r) < sizeof m) continue;
    have = 0;
    *(m.type == RESULT ? result : stage) = m;
    deadline = now() + timeout_s; /* the timeout is each stage's */
  }
}

/* The child's end, once it closed the pipe (or overran: then killed first);
 * one that closes the pipe and goes on is killed after the timeout. -1: not
 * known (an ignored SIGCHLD reaps children). */
static int reap(pid_t pid, int kill_it, int timeout_s) {
  if (kill_it) kill(pid, SIGKILL);
  double deadline = now() + timeout_s;
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, kill_it ? 0 : WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (r == 0 && now() > deadline) kill(pid, SIGKILL), kill_it = 1;
    if (r == 0) poll(NULL, 0, 1);
  }
}

int nd__probe(const nd__probe_ctx *ctx, int (*body)(const void *arg, nd_error *err), const void *arg, nd_error *err) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return nd__fail(err, ND_ERUNTIME, "%s: cannot start it: %s", ctx->where, strerror(errno));
  fflush(NULL); /* else the child would print what is buffered a second time */
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]), close(fds[1]);
    return nd__fail(err, ND_ERUNTIME, "%s: cannot start it: %s", ctx->where, strerror(e));
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], body, arg);
  }
  close(fds[1]);
  message stage = {STAGE, 0, "ndgraph"}, result = {-1, 0, ""};
  int late = listen_to(fds[0], ctx->timeout_s, &stage, &result);
  close(fds[0]);
  int status = reap(pid, late, ctx->timeout_s);
  if (late)
    return nd__fail(err, ND_ERUNTIME, "%s: no answer within %d s in %s (%s); stopped", stage.text, ctx->timeout_s,
                    ctx->where, ctx->setting);
  if (result.type == RESULT) return result.rc < 0 ? nd__fail(err, result.rc, "%s", result.text) : result.rc;
  if (status != -1 && WIFSIGNALED(status))
    return nd__fail(err, ND_ERUNTIME, "%s: killed by signal %d (%s) in %s", stage.text, WTERMSIG(status),
                    strsignal(WTERMSIG(status)), ctx->where);
  if (status != -1 && WIFEXITED(status))
    return nd__fail(err, ND_ERUNTIME, "%s: exited the process (status %d) in %s", stage.text, WEXITSTATUS(status),
                    ctx->where);
  return nd__fail(err, ND_ERUNTIME, "%s: ended without an answer in %s", stage.text, ctx->where);
}
