/* What every SVG the library draws shares: text from input files made safe
 * inside an element or an attribute, and round tick steps for an axis. */
#ifndef ND_COMMON_SVG_H
#define ND_COMMON_SVG_H

#include <stdio.h>

/* s with <, >, & and " as entities; control bytes, which XML forbids, left out. */
void nd__svg_text(FILE *f, const char *s);

/* 1, 2 or 5 times a power of ten, giving about `ticks` ticks over span. */
double nd__svg_tick_step(double span, int ticks);

#endif
