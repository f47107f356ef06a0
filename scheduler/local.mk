# scheduler: files of this folder, included by the top-level Makefile.am.
libndgraph_internal_la_SOURCES += \
	scheduler/queue.c scheduler/queue.h \
	scheduler/idle.c scheduler/idle.h \
	scheduler/home.c scheduler/home.h \
	scheduler/ndws.c scheduler/ndseq.c \
	scheduler/policies.c scheduler/policies.h
libndgraph_internal_la_SOURCES += \
	scheduler/hints.c scheduler/hints.h scheduler/report.c scheduler/fit.c
