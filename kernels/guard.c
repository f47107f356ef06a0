/* The plugin kernel each thread is running, and what the process says of it
 * when it dies there. Everything the handlers call is async-signal-safe:
 * the line is built by hand and written with write(2). */
#include "kernels/guard.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* initial-exec: the handler reads it without the allocation a first
 * access of a dynamic TLS block may make */
static _Thread_local __attribute__((tls_model("initial-exec"))) const nd__kernel_slot *running;
static _Thread_local __attribute__((tls_model("initial-exec"))) int running_kind;

static const struct {
  int sig;
  const char *name; /* strsignal's, which a handler may not call */
} fatal[] = {{SIGSEGV, "Segmentation fault"},
             {SIGBUS, "Bus error"},
             {SIGILL, "Illegal instruction"},
             {SIGFPE, "Floating point exception"},
             {SIGABRT, "Aborted"}};
#define N_FATAL (sizeof fatal / sizeof fatal[0])
static struct sigaction previous[N_FATAL];

typedef struct line {
  char buf[1024];
  size_t n;
} line;

/* s, control characters as '?' (nd__fail's rule: the line stays one line) */
static void put(line *l, const char *s) {
  for (; *s && l->n < sizeof l->buf - 1; s++) l->buf[l->n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
}

static void put_int(line *l, int v) {
  char digits[16];
  int n = 0;
  unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
  do digits[n++] = (char)('0' + u % 10);
  while ((u /= 10) && n < (int)sizeof digits);
  if (v < 0) put(l, "-");
  while (n > 0 && l->n < sizeof l->buf - 1) l->buf[l->n++] = digits[--n];
}

/* "ndgraph: PLUGIN: kernel 'NAME' for KIND: " */
static void start(line *l, const nd__kernel_slot *s, int kind) {
  l->n = 0;
  put(l, "ndgraph: ");
  put(l, s->origin);
  put(l, ": kernel '");
  put(l, s->name);
  put(l, "' for ");
  put(l, nd_task_kind_name((enum nd_task_kind)kind));
  put(l, ": ");
}

static void finish(line *l) {
  put(l, " while running");
  l->buf[l->n++] = '\n';
  ssize_t w = write(STDERR_FILENO, l->buf, l->n);
  (void)w; /* nothing else can be said */
}

static void on_fatal(int sig, siginfo_t *info, void *ctx) {
  size_t i = 0;
  while (i < N_FATAL - 1 && fatal[i].sig != sig) i++;
  const nd__kernel_slot *s = running;
  if (s) {
    running = NULL; /* a fault in what follows is not the plugin's */
    line l;
    start(&l, s, running_kind);
    put(&l, "killed by signal ");
    put_int(&l, sig);
    put(&l, " (");
    put(&l, fatal[i].name);
    put(&l, ")");
    finish(&l);
  }
  const struct sigaction *was = &previous[i];
  if (was->sa_flags & SA_SIGINFO) {
    was->sa_sigaction(sig, info, ctx);
    return;
  }
  if (was->sa_handler != SIG_DFL && was->sa_handler != SIG_IGN) {
    was->sa_handler(sig);
    return;
  }
  /* the default action, once this handler returns (the signal is blocked
   * until then; a fault that recurs on return meets it too) */
  struct sigaction dfl = {0};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
}

/* exit() from a kernel would end a run with its status, 0 passing for success */
static void on_exit_check(int status, void *arg) {
  (void)arg;
  const nd__kernel_slot *s = running;
  if (!s) return;
  line l;
  start(&l, s, running_kind);
  put(&l, "called exit(");
  put_int(&l, status);
  put(&l, ")");
  finish(&l);
  _exit(1);
}

static void install(void) {
  struct sigaction sa = {0};
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* the alternate stack where one is set (a sanitizer's) */
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < N_FATAL; i++) sigaction(fatal[i].sig, &sa, &previous[i]);
  on_exit(on_exit_check, NULL);
}

void nd__guard_enter(const nd__kernel_slot *s, enum nd_task_kind kind) {
  if (!s->fn || strcmp(s->origin, "builtin") == 0) return;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, install);
  running_kind = (int)kind;
  running = s;
}

void nd__guard_leave(void) { running = NULL; }
