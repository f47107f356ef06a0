/* Text from input files (trace event and thread names) made safe to print
 * on a terminal, which would act on its control characters. */
#ifndef ND_COMMON_ESCAPE_H
#define ND_COMMON_ESCAPE_H

#include <stddef.h>

/* s into out, each byte a terminal could act on written as \xHH: C0
 * controls, DEL, C1 controls (U+0080..U+009F) and bytes that are not valid
 * UTF-8; other UTF-8 text unchanged. Cut short at a character boundary to
 * fit size (4 * strlen(s) + 1 always fits). Returns out. */
const char *nd__escape(char *out, size_t size, const char *s);

#endif
