# data: files of this folder, included by the top-level Makefile.am.
libndgraph_la_SOURCES += data/dataset.c data/dataset.h data/builtin.c data/builtin.h
