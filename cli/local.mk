# cli: the ndgraph command, a thin client of the library.
ndgraph_SOURCES = cli/main.c
ndgraph_LDADD = libndgraph.la $(ND_LIBS)
