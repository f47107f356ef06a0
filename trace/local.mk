# trace: files of this folder, included by the top-level Makefile.am.
# Task traces: capture (recorder), the tasks of the job across processes
# (job), Chrome JSON (chrome), reading any trace
# back (reader), several steps laid end to end (steps), summary, Gantt SVG;
# tools.c is the public API over them.
libndgraph_internal_la_SOURCES += trace/model.h trace/reader.c trace/steps.c trace/chrome.h trace/chrome.c trace/job.h trace/job.c trace/recorder.h \
	trace/recorder.c trace/summary.h trace/summary.c trace/svg.h trace/svg.c \
	trace/tools.c
