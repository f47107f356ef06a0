# data: files of this folder, included by the top-level Makefile.am.
libndgraph_internal_la_SOURCES += data/dataset.c data/dataset.h data/builtin.c data/builtin.h

# A tool to write a built-in dataset to a file, built on request only
# (`make scripts/nd-dump-builtin`; then scripts/nd-dump-builtin tales out.txt).
EXTRA_PROGRAMS = scripts/nd-dump-builtin
CLEANFILES += scripts/nd-dump-builtin$(EXEEXT)
scripts_nd_dump_builtin_SOURCES = scripts/dump_builtin.c
scripts_nd_dump_builtin_LDADD = $(ND_INTERNAL_LIBS)
