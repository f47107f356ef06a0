/* `ndgraph plan`: the step's graph as the kernels that would run it cost it,
 * summarized as text or JSON, and optionally drawn for Graphviz. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "common/error.h"
#include "graph/plan.h"
#include "kernels/registry.h"
#include "train/costs.h"

/* The plan's JSON with the kernel chosen for each task kind. */
static void print_json(FILE *out, const nd_graph *g, const nd_plan *p) {
  cJSON *root = nd_plan_json(g, p);
  cJSON *kernels = cJSON_AddObjectToObject(root, "kernels");
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    if (!nd__kernels[k].fn) continue;
    cJSON *impl = cJSON_AddObjectToObject(kernels, nd_task_kind_name((enum nd_task_kind)k));
    cJSON_AddStringToObject(impl, "name", nd__kernels[k].name);
    cJSON_AddStringToObject(impl, "origin", nd__kernels[k].origin);
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  fprintf(out, "%s\n", s ? s : "{}");
  free(s);
}

int nd_plan_report(const nd_config *cfg, FILE *out, int json, const char *dot_path, nd_error *err) {
  nd_graph *g = NULL;
  nd_plan p;
  int rc = nd_kernels_setup(cfg, err);
  if (rc) return rc;
  if ((rc = nd_graph_build(&g, cfg, 0, err))) {
    nd_kernels_teardown();
    return rc;
  }
  nd__apply_plugin_costs(g);
  if ((rc = nd_plan_compute(g, &p))) {
    nd_graph_free(g);
    nd_kernels_teardown();
    return nd__fail(err, rc, "plan: out of memory");
  }
  if (json) {
    print_json(out, g, &p);
  } else {
    nd_plan_print(out, g, &p);
    nd__kernels_print(out);
  }
  if (dot_path) rc = nd_graph_write_dot(g, dot_path, err);
  nd_plan_free(&p);
  nd_graph_free(g);
  nd_kernels_teardown();
  return rc;
}
