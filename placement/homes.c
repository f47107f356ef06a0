/* Homes and restrictions of a graph's tasks on a rank map. */
#include "placement/homes.h"

int nd_task_unit(const nd_graph *g, const nd_rank_map *pl, const nd_unit_check *can, const nd_task *t, int spread) {
  int r = nd_rank_index(g, t->rank);
  int u = pl->first[r] + (spread && t->micro_batch >= 0 ? t->micro_batch % pl->count[r] : 0);
  if (pl->units[u].kind == ND_BACKEND_CPU || can->runs_on(can->ctx, t, pl->units[u].kind)) return u;
  for (int i = pl->first[r]; i < pl->first[r] + pl->count[r]; i++)
    if (pl->units[i].kind == ND_BACKEND_CPU) return i;
  for (int i = 0; i < pl->n_units; i++)
    if (pl->units[i].kind == ND_BACKEND_CPU) return i;
  return u;
}

/* Whether the units are of more than one kind (a mixed node). */
static int mixed_kinds(const nd_rank_map *pl) {
  for (int i = 1; i < pl->n_units; i++)
    if (pl->units[i].kind != pl->units[0].kind) return 1;
  return 0;
}

/* Two kinds of device round differently (their own kernels): under
 * runtime.deterministic a task that may leave its home stays on units of
 * its home's kind, so its bits do not depend on who was idle
 * (docs/scheduler.md, *Determinism*). */
static int same_kind(const nd_rank_map *pl, int fixed, enum nd_placement mode, int deterministic) {
  return deterministic && !fixed && mode != ND_PLACEMENT_STRICT && mixed_kinds(pl);
}

int nd_task_restricted(const nd_rank_map *pl, int fixed, enum nd_placement mode, int deterministic) {
  return fixed || mode == ND_PLACEMENT_STRICT || same_kind(pl, fixed, mode, deterministic);
}

/* Adds every unit of `kind` to mask. */
static void kind_mask(const nd_rank_map *pl, int kind, uint32_t *mask) {
  for (int i = 0; i < pl->n_units; i++)
    if (pl->units[i].kind == kind && pl->units[i].id >= 0)
      mask[pl->units[i].id / 32] |= UINT32_C(1) << (pl->units[i].id % 32);
}

void nd_task_homes(const nd_graph *g, const nd_rank_map *pl, const nd_unit_check *can, int fixed,
                   enum nd_placement mode, int deterministic, int *home, uint32_t *mask) {
  int words = nd_rank_map_mask_words(pl), kinds = same_kind(pl, fixed, mode, deterministic);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    /* a collective's home is its first participant, t->rank */
    int r = nd_rank_index(g, t->rank);
    const nd_unit *unit = &pl->units[nd_task_unit(g, pl, can, t, !fixed)];
    int id = unit->id;
    home[i] = mode == ND_PLACEMENT_FREE && !fixed ? -1 : id;
    if (!mask) continue;
    uint32_t *m = &mask[(size_t)i * (size_t)words];
    m[id / 32] |= UINT32_C(1) << (id % 32);
    if (kinds)
      kind_mask(pl, unit->kind, m);
    else if (!fixed)
      nd_rank_map_mask(pl, r, m);
  }
}
