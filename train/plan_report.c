/* `ndgraph plan`: the step's graph as the kernels that would run it cost it,
 * summarized as text or JSON, and optionally drawn for Graphviz. The plan's
 * kernel table is its own: a trainer open in the process keeps its own. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "common/error.h"
#include "graph/plan.h"
#include "kernels/registry.h"

/* The plan's JSON with the kernel chosen for each replaceable task kind. */
static void print_json(FILE *out, const nd_graph *g, const nd_plan *p, const nd_kernels *k) {
  cJSON *root = nd_plan_json(g, p);
  cJSON *kernels = cJSON_AddObjectToObject(root, "kernels");
  for (int kind = 0; kind < ND_TASK_KIND_COUNT; kind++) {
    const char *name, *origin;
    if (!nd__kernels_selected(k, (enum nd_task_kind)kind, &name, &origin)) continue;
    cJSON *impl = cJSON_AddObjectToObject(kernels, nd_task_kind_name((enum nd_task_kind)kind));
    cJSON_AddStringToObject(impl, "name", name);
    cJSON_AddStringToObject(impl, "origin", origin);
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  fprintf(out, "%s\n", s ? s : "{}");
  free(s);
}

int nd_plan_report(const nd_config *cfg, int processes, FILE *out, int json, const char *dot_path, nd_error *err) {
  nd_graph *g = NULL;
  nd_plan p;
  nd_kernels *k = NULL;
  int rc = nd_kernels_open(&k, cfg, err);
  if (rc) return rc;
  if ((rc = nd_graph_build_pairs(&g, cfg, 0, NULL, processes, err))) goto done;
  if ((rc = nd_kernels_apply_costs(k, g, err))) goto done;
  if ((rc = nd_plan_compute(g, &p))) {
    rc = nd__fail(err, rc, "plan: out of memory");
    goto done;
  }
  if (json) {
    print_json(out, g, &p, k);
  } else {
    nd_plan_print(out, g, &p);
    nd__kernels_print(k, out);
  }
  if (dot_path) rc = nd_graph_write_dot(g, dot_path, err);
  nd_plan_free(&p);
done:
  nd_graph_free(g);
  nd_kernels_close(k);
  return rc;
}
