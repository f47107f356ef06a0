# train: the training loop on top of graph/ and tasks/: initialization, schedule,
# evaluation, checkpoints, logging.
libndgraph_la_SOURCES += train/balance.c train/trainer.c train/init.c train/init.h train/run.c train/trainer_internal.h
