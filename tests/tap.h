/* A minimal TAP producer for the test programs: `make check` counts each ok(). */
#ifndef ND_TESTS_TAP_H
#define ND_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap__count, tap__failed;

/* Prints "ok N - NAME" or "not ok N - NAME"; returns cond so callers can chain. */
static inline int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int ok(int cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%sok %d - ", cond ? "" : "not ", ++tap__count);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (!cond) tap__failed++;
  return cond;
}

/* A case that cannot run here (no device, no platform): counted as skipped. */
static inline void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("ok %d - # SKIP ", ++tap__count);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

/* A note that shows in the log, not counted. */
#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

/* Ends the program: prints the plan and exits non-zero if a case failed. */
static inline int done_testing(void) {
  printf("1..%d\n", tap__count);
  return tap__failed ? 1 : 0;
}

#endif
