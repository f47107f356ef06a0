/* The small model the share tests cut across processes (test_mpi_share,
 * test_trace_share, test_stage_share): 6 layers, 3 micro-batches of 2, and
 * `sets` ("section.key=value ..." separated by spaces) on top; NULL, with a
 * diagnostic, when a value is refused. */
#ifndef ND_TESTS_SHARE_CONFIG_H
#define ND_TESTS_SHARE_CONFIG_H

#include <stdio.h>
#include <string.h>

#include "configs/config.h"
#include "tests/tap.h"

static inline nd_config *share_config(const char *sets) {
  nd_config *cfg;
  nd_error err = {0};
  char buf[512], *save = NULL;
  if (nd_config_new(&cfg)) return NULL;
  snprintf(buf, sizeof buf,
           "model.n_layer=6 model.n_embd=32 model.n_head=4 model.seq_len=16 model.vocab_size=256 "
           "train.micro_batch_size=2 parallelism.micro_batches=3 parallelism.activation_slots=2 %s",
           sets);
  for (char *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
    if (nd_config_set_assignment(cfg, kv, &err)) {
      diag("%s: %s", kv, err.msg);
      nd_config_free(cfg);
      return NULL;
    }
  if (nd_config_validate(cfg, &err)) {
    diag("%s: %s", sets, err.msg);
    nd_config_free(cfg);
    return NULL;
  }
  return cfg;
}

#endif
