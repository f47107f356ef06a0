/* ND_EXPORT: what the library exports. It is built with -fvisibility=hidden
 * (Makefile.am), and the public API's functions are marked with this; both
 * public headers include it. */
#ifndef NDGRAPH_EXPORT_H
#define NDGRAPH_EXPORT_H

#if defined(__GNUC__)
#define ND_EXPORT __attribute__((visibility("default")))
#else
#define ND_EXPORT
#endif

#endif
