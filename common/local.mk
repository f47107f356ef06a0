# common: what every layer shares (error codes and messages).
libndgraph_la_SOURCES += common/error.c common/error.h
