# cli: the ndgraph command, a thin client of the library.
ndgraph_SOURCES = cli/main.c cli/commands.h cli/parse.c cli/run.c cli/plan.c cli/eval.c cli/kernel_check.c cli/exit.c \
	cli/trace.c cli/plot.c cli/calibrate.c cli/signals.c cli/grace.c cli/generate.c cli/text.c cli/tokenize.c
ndgraph_LDADD = libndgraph.la $(ND_LIBS)
