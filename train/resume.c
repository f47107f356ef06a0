/* Resuming or fine-tuning: finds the checkpoint a directory names and loads
 * what it holds. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "configs/config.h"
#include "train/trainer_internal.h"

/* A step-N directory (or a Hugging Face one, whose weights may be in shards
 * listed by model.safetensors.index.json), or a save_dir whose newest complete
 * step-N is meant (a newer incomplete one is named in note, never skipped silently). */
static int resolve(const char *dir, char *out, size_t size, char *note, nd_error *err) {
  char probe[ND_PATH_MAX + 32], index[ND_PATH_MAX + 48];
  struct stat st;
  note[0] = '\0';
  snprintf(probe, sizeof probe, "%s/model.safetensors", dir);
  snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
  if (stat(probe, &st) == 0 || stat(index, &st) == 0) {
    if ((size_t)snprintf(out, size, "%s", dir) >= size) return nd__fail(err, ND_EINVAL, "%s: path too long", dir);
    return 0;
  }
  int rc = nd_checkpoint_latest(dir, out, size, err);
  const char *slash = rc ? NULL : strrchr(out, '/');
  int64_t used, newer;
  const char *missing;
  if (slash && nd__checkpoint_step_of(slash + 1, "step-", &used, NULL) &&
      nd_checkpoint_newer_incomplete(dir, used, &newer, &missing))
    snprintf(note, ND_ERROR_MAX,
             "%s/step-%" PRId64 " is incomplete (no %s): resuming from the older step-%" PRId64 ", which is complete",
             dir, newer, missing, used);
  return rc;
}

int nd_trainer_resume(nd_trainer *tr, const char *dir, char *used, size_t size, int *with_state, nd_error *err) {
  char probe[ND_PATH_MAX + 96];
  struct stat st;
  int rc = resolve(dir, used, size, nd__trainer_resume_note(tr), err);
  if (rc) return rc;
  snprintf(probe, sizeof probe, "%s/optimizer.safetensors", used);
  *with_state = stat(probe, &st) == 0;
  return nd__trainer_load_dir(tr, used, *with_state, err);
}

int nd_trainer_load(nd_trainer *tr, const char *dir, int with_state, nd_error *err) {
  char used[ND_PATH_MAX + 64];
  int rc = resolve(dir, used, sizeof used, nd__trainer_resume_note(tr), err);
  return rc ? rc : nd__trainer_load_dir(tr, used, with_state, err);
}
