/* What a trainer runs on, for a run's header lines: devices, the kernels
 * plugins supply, and how stage_layers: auto split the layers. */
#include <string.h>

#include "common/device.h"
#include "kernels/registry.h"
#include "train/trainer_internal.h"

void nd_trainer_devices(const nd_trainer *tr, int count[ND_BACKEND_COUNT]) {
  (void)tr; /* one StarPU runtime per process, started by the trainer */
  for (int b = 0; b < ND_BACKEND_COUNT; b++) count[b] = b == ND_BACKEND_CPU ? nd_runtime_workers() : nd_runtime_devices(b);
}

int nd_trainer_device(const nd_trainer *tr, int kind, int i, char *name, size_t size) {
  (void)tr;
  return nd_runtime_device_name(kind, i, name, size) ? ND_EINVAL : 0;
}

int nd_trainer_plugin_kernel(const nd_trainer *tr, int i, const char **kind, const char **name, const char **origin) {
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    if (!nd__kernels_selected(nd__trainer_kernels(tr), (enum nd_task_kind)k, name, origin) ||
        strcmp(*origin, "builtin") == 0 || i-- > 0)
      continue;
    *kind = nd_task_kind_name(k);
    return 0;
  }
  return ND_EINVAL;
}

int nd_trainer_stage(const nd_trainer *tr, int stage, nd_stage_info *out) {
  const nd_balance *b = nd__trainer_balance(tr);
  if (stage < 0 || stage >= b->stages) return ND_EINVAL;
  *out = (nd_stage_info){b->split[stage],
                         nd_device_unit_name(b->kind[stage]),
                         b->mixed ? b->layer_us[stage] / 1e3 : -1,
                         b->mixed ? b->other_us[stage] / 1e3 : -1,
                         b->mixed ? b->balanced[stage] : b->split[stage],
                         b->mixed ? b->cpu_alone_ms : -1};
  return 0;
}
