#include "common/svg.h"

#include <math.h>

void nd__svg_text(FILE *f, const char *s) {
  for (; *s; s++) switch (*s) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
}

double nd__svg_tick_step(double span, int ticks) {
  double raw = span / ticks, p = raw > 0 ? pow(10, floor(log10(raw))) : 0;
  if (!(p > 0) || !isfinite(p)) return span > 0 && isfinite(span) ? span : 1; /* below the smallest power of ten */
  return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}
