# train: the trainer on top of graph/ and tasks/: initialization, schedule,
# evaluation, checkpoints, traced steps. The run loop itself is the CLI's (cli/run.c).
libndgraph_internal_la_SOURCES += train/balance.c train/trainer.c train/init.c train/init.h train/resume.c train/traced.c \
	train/describe.c train/trainer_internal.h train/plan_report.c train/calibrate.c train/calstats.c train/calstats.h train/processes.c train/shared.c \
	train/nodes_report.c train/tune.c train/memory.c train/generate.c train/sample.c train/sample.h
