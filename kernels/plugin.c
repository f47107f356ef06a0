/* Loading kernel plugins (dlopen) and setting the table up from a
 * configuration: built-ins, in-process inits, the configuration's plugins,
 * the selection, and one validation call of each selected plugin kernel. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "kernels/registry.h"

#define ND__MAX_STATIC 16

static struct {
  char label[ND_NAME_MAX];
  nd_plugin_init_fn init;
} statics[ND__MAX_STATIC];
static int n_statics;

static void *handles[ND_MAX_PLUGINS + 1];
static int n_handles;

int nd_kernels_add_static(const char *label, nd_plugin_init_fn init) {
  if (n_statics == ND__MAX_STATIC || !init) return -1;
  snprintf(statics[n_statics].label, sizeof statics[n_statics].label, "%s", label ? label : "static");
  statics[n_statics++].init = init;
  return 0;
}

void nd_kernels_clear_static(void) { n_statics = 0; }

void nd_kernels_teardown(void) {
  nd__kernels_reset();
  for (int i = 0; i < n_handles; i++) dlclose(handles[i]);
  n_handles = 0;
}

/* dlerror's text on one line, without the path it repeats. */
static const char *dl_reason(const char *path, char *buf, size_t size) {
  const char *e = dlerror();
  if (!e) e = "unknown dlopen error";
  size_t n = strlen(path);
  if (strncmp(e, path, n) == 0 && e[n] == ':') e += n + 1 + (e[n + 1] == ' ');
  snprintf(buf, size, "%s", e);
  for (char *c = buf; *c; c++)
    if (*c == '\n') *c = ' ';
  return buf;
}

/* Whether a dynamic symbol is code: calling a data symbol would jump into
 * its bytes. The symbol's ELF type says (an indirect function counts). */
static int is_function(void *sym) {
  Dl_info info;
  const ElfW(Sym) *es = NULL;
  if (!dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) || !es) return 0;
  int type = __ELF_NATIVE_CLASS == 64 ? ELF64_ST_TYPE(es->st_info) : ELF32_ST_TYPE(es->st_info);
  return type == STT_FUNC || type == STT_GNU_IFUNC;
}

static int load(const char *path, nd_error *err) {
  struct stat st;
  char why[512];
  if (strchr(path, '/')) {
    if (stat(path, &st) != 0) return nd__fail(err, ND_EPLUGIN, "%s: cannot load the plugin: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return nd__fail(err, ND_EPLUGIN, "%s: cannot load the plugin: not a regular file", path);
  }
  if (n_handles == ND_MAX_PLUGINS + 1) return nd__fail(err, ND_EPLUGIN, "%s: too many plugins", path);
  dlerror();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return nd__fail(err, ND_EPLUGIN, "%s: not a loadable shared object: %s", path, dl_reason(path, why, sizeof why));
  handles[n_handles++] = h;
  void *sym = dlsym(h, ND_PLUGIN_ENTRY);
  if (!sym) return nd__fail(err, ND_EPLUGIN, "%s: no entry point %s (is it an ndgraph plugin?)", path, ND_PLUGIN_ENTRY);
  if (!is_function(sym))
    return nd__fail(err, ND_EPLUGIN, "%s: %s is not a function (its dynamic symbol is data)", path, ND_PLUGIN_ENTRY);
  nd_plugin_init_fn init;
  memcpy(&init, &sym, sizeof init); /* ISO C has no object-to-function pointer cast */
  return nd__kernels_run_init(path, init, err);
}

static int start(nd_error *err) {
  nd_kernels_teardown();
  for (int i = 0; i < n_statics; i++) {
    int rc = nd__kernels_run_init(statics[i].label, statics[i].init, err);
    if (rc) return rc;
  }
  return 0;
}

/* One small call of each plugin kernel in use, so that a kernel that fails
 * stops ndgraph before training rather than in the middle of a step. */
static int validate(nd_error *err) {
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    const nd__kernel_slot *s = &nd__kernels[k];
    if (!s->fn || strcmp(s->origin, "builtin") == 0 || k == ND_TASK_ACT_BWD) continue;
    const nd__kernel_impl *im = k == ND_TASK_ACT_FWD ? nd__activation_find(s->name) : nd__kernel_find(k, s->name);
    int rc = im ? nd__kernel_check(k, im, 1, NULL, err) : 0;
    if (rc < 0) return rc;
  }
  return 0;
}

int nd_kernels_setup(const nd_config *cfg, nd_error *err) {
  int rc = start(err);
  for (int64_t i = 0; i < cfg->kernels.n_plugins && !rc; i++) rc = load(cfg->kernels.plugins[i], err);
  if (!rc) rc = nd__kernels_select(cfg, err);
  if (!rc) rc = validate(err);
  if (rc) nd_kernels_teardown();
  return rc;
}

int nd_kernels_load_one(const char *path, nd_error *err) {
  int rc = start(err);
  if (!rc) rc = load(path, err);
  if (rc) nd_kernels_teardown();
  return rc;
}
