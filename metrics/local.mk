# metrics: files of this folder, included by the top-level Makefile.am.
# Metrics files (JSON Lines, as `ndgraph run --metrics` writes them) read
# back (reader) and drawn as one SVG chart of every run (chart); tools.c is
# the public API over them.
libndgraph_internal_la_SOURCES += metrics/series.h metrics/reader.c metrics/chart.h metrics/chart.c metrics/tools.c
