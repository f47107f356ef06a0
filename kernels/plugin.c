/* Loading kernel plugins (dlopen) and setting a table up from a
 * configuration: built-ins, in-process inits, the configuration's plugins,
 * the selection, and one validation call of each selected plugin kernel,
 * all first in a child process (kernels/probe.h) when plugins are named. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "kernels/probe.h"
#include "kernels/registry.h"

#define ND__MAX_STATIC 16

static struct {
  char label[ND_NAME_MAX];
  nd_plugin_init_fn init;
} statics[ND__MAX_STATIC];
static int n_statics;

int nd_kernels_add_static(const char *label, nd_plugin_init_fn init) {
  if (n_statics == ND__MAX_STATIC || !init) return -1;
  snprintf(statics[n_statics].label, sizeof statics[n_statics].label, "%s", label ? label : "static");
  statics[n_statics++].init = init;
  return 0;
}

void nd_kernels_clear_static(void) { n_statics = 0; }

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

/* Whether the file holds every byte its ELF headers promise. dlopen maps a
 * truncated object without complaint, and the first touch of a page past the
 * file's end is SIGBUS, so this is checked before: the header, the program
 * headers and each loaded segment must lie within the file. Other defects
 * are dlopen's to report. */
static int check_extent(const char *path, const char *file, off_t size, nd_error *err) {
  FILE *f = fopen(file, "rb");
  if (!f) return nd__fail(err, ND_EPLUGIN, "%s: cannot load the plugin: %s", path, strerror(errno));
  ElfW(Ehdr) eh;
  int rc = 0;
  if (fread(&eh, sizeof eh, 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    goto done; /* not ELF, or shorter than its header: dlopen says which */
  if (eh.e_ident[EI_CLASS] != (__ELF_NATIVE_CLASS == 64 ? ELFCLASS64 : ELFCLASS32) ||
      eh.e_phentsize != sizeof(ElfW(Phdr)))
    goto done;
  if (eh.e_phoff > (uint64_t)size || (uint64_t)eh.e_phnum * sizeof(ElfW(Phdr)) > (uint64_t)size - eh.e_phoff) {
    rc = nd__fail(err, ND_EPLUGIN, "%s: not a loadable shared object: truncated (%lld bytes, program headers beyond)",
                  path, (long long)size);
    goto done;
  }
  int at_headers = fseeko(f, (off_t)eh.e_phoff, SEEK_SET) == 0; /* they follow one another */
  for (int i = 0; i < eh.e_phnum && !rc; i++) {
    ElfW(Phdr) ph;
    if (!at_headers || fread(&ph, sizeof ph, 1, f) != 1) {
      rc = nd__fail(err, ND_EPLUGIN, "%s: cannot load the plugin: cannot read its program headers", path);
      break;
    }
    if (ph.p_type == PT_LOAD && (ph.p_offset > (uint64_t)size || ph.p_filesz > (uint64_t)size - ph.p_offset))
      rc = nd__fail(err, ND_EPLUGIN,
                    "%s: not a loadable shared object: truncated (%lld bytes, a segment ends at byte %llu)", path,
                    (long long)size, (unsigned long long)(ph.p_offset + ph.p_filesz));
  }
done:
  fclose(f);
  return rc;
}

static int load(nd_kernels *k, const char *path, nd_error *err) {
  struct stat st;
  char why[512], local[4096];
  /* dlopen("") would hand back the program itself */
  if (!*path) return nd__fail(err, ND_EPLUGIN, "a plugin's file name is empty");
  /* a plugin is a file: a name without a slash is in the current directory,
   * not on the library search path where dlopen would look for it */
  const char *file = path;
  if (!strchr(path, '/')) {
    if ((size_t)snprintf(local, sizeof local, "./%s", path) >= sizeof local)
      return nd__fail(err, ND_EPLUGIN, "%s: cannot load the plugin: file name too long", path);
    file = local;
  }
  if (stat(file, &st) != 0) return nd__fail(err, ND_EPLUGIN, "%s: cannot load the plugin: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return nd__fail(err, ND_EPLUGIN, "%s: cannot load the plugin: not a regular file", path);
  int rc = check_extent(path, file, st.st_size, err);
  if (rc) return rc;
  dlerror();
  nd__probe_stage("%s: loading the plugin (its constructors)", path);
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return nd__fail(err, ND_EPLUGIN, "%s: not a loadable shared object: %s", path, dl_reason(file, why, sizeof why));
  if (nd__kernels_keep(k, h)) {
    dlclose(h);
    return nd__fail(err, ND_EPLUGIN, "%s: too many plugins", path);
  }
  void *sym = dlsym(h, ND_PLUGIN_ENTRY);
  if (!sym) return nd__fail(err, ND_EPLUGIN, "%s: no entry point %s (is it an ndgraph plugin?)", path, ND_PLUGIN_ENTRY);
  if (!is_function(sym))
    return nd__fail(err, ND_EPLUGIN, "%s: %s is not a function (its dynamic symbol is data)", path, ND_PLUGIN_ENTRY);
  nd_plugin_init_fn init;
  memcpy(&init, &sym, sizeof init); /* ISO C has no object-to-function pointer cast */
  return nd__kernels_run_init(k, path, init, err);
}

/* A new table with the built-ins and the static inits. */
static int start(nd_kernels **out, nd_error *err) {
  nd_kernels *k = *out = nd__kernels_new();
  if (!k) return nd__fail(err, ND_ENOMEM, "kernels: out of memory");
  for (int i = 0; i < n_statics; i++) {
    int rc = nd__kernels_run_init(k, statics[i].label, statics[i].init, err);
    if (rc) return rc;
  }
  return 0;
}

/* One small call of each plugin kernel in use (on the CPU), so that a kernel
 * that fails stops ndgraph before training rather than in the middle of a step. */
static int validate(const nd_kernels *k, nd_error *err) {
  for (int kind = 0; kind < ND_TASK_KIND_COUNT; kind++) {
    const char *name, *origin;
    if (!nd__kernels_selected(k, kind, &name, &origin) || strcmp(origin, "builtin") == 0 || kind == ND_TASK_ACT_BWD)
      continue;
    const nd__kernel_impl *im = kind == ND_TASK_ACT_FWD ? nd__activation_find(k, name) : nd__kernel_find(k, kind, name);
    int rc = im ? nd__kernel_check(kind, im, 1, NULL, err) : 0;
    if (rc < 0) return rc;
  }
  return 0;
}

/* The table for cfg; check: with the validation calls. */
static int open_table(nd_kernels **out, const nd_config *cfg, int check, nd_error *err) {
  nd_kernels *k = NULL;
  int rc = start(&k, err);
  for (int64_t i = 0; i < cfg->kernels.n_plugins && !rc; i++) rc = load(k, cfg->kernels.plugins[i], err);
  if (!rc) rc = nd__kernels_select(k, cfg, err);
  if (!rc && check) rc = validate(k, err);
  if (rc) nd_kernels_close(k);
  *out = rc ? NULL : k;
  return rc;
}

static int probe_table(const void *cfg, nd_error *err) {
  nd_kernels *k;
  int rc = open_table(&k, cfg, 1, err);
  nd_kernels_close(k);
  return rc;
}

/* The plugins' constructors, inits and validation calls run first in a
 * child: a plugin that crashes, hangs or exits there is named and ndgraph
 * stays up. Then the same table here, its kernels not called again: they
 * have just passed on the same inputs. */
int nd_kernels_open(nd_kernels **out, const nd_config *cfg, nd_error *err) {
  *out = NULL;
  if (cfg->kernels.n_plugins > 0) {
    nd__probe_ctx ctx = {"the start-up probe", "kernels.probe_timeout", (int)cfg->kernels.probe_timeout};
    int rc = nd__probe(&ctx, probe_table, cfg, err);
    if (rc) return rc;
  }
  return open_table(out, cfg, cfg->kernels.n_plugins == 0, err);
}

int nd_kernels_open_one(nd_kernels **out, const char *path, nd_error *err) {
  nd_kernels *k = NULL;
  int rc = start(&k, err);
  if (!rc) rc = load(k, path, err);
  if (rc) nd_kernels_close(k);
  *out = rc ? NULL : k;
  return rc;
}
