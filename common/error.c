/* Filling an nd_error: a code and a one-line message, and the table that
 * turns codes into words. */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>

const char *nd_strerror(int code) {
  if (code == 0) return "success";
  switch (code) {
#define ND__ERRNO_CASE(name, value, text) \
  case value:                             \
    return text;
    ND_ERRNO_MAP(ND__ERRNO_CASE)
#undef ND__ERRNO_CASE
  }
  return "unknown error";
}

int nd__fail(nd_error *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    /* an error is one line, whatever the input it quotes holds (a key or an
     * event name with a newline): control characters become '?' */
    for (char *c = err->msg; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  }
  return code;
}
