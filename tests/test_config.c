/* Configuration: loading, the exact error of every bad file, --set, get,
 * validation and the dump round trip. Data lives under tests/configs/. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "configs/keys.h"
#include "tap.h"

static char srcdir[1024];

static const char *path_of(const char *rel) {
  static char buf[2048];
  snprintf(buf, sizeof buf, "%s/tests/configs/%s", srcdir, rel);
  return buf;
}

static nd_config *fresh(void) {
  nd_config *cfg = NULL;
  if (nd_config_new(&cfg) != 0) {
    printf("Bail out! nd_config_new failed\n");
    exit(1);
  }
  return cfg;
}

static const char *get(const nd_config *cfg, const char *key) {
  static char buf[4][20000];
  static int which;
  char *b = buf[which++ % 4];
  if (nd_config_get(cfg, key, b, sizeof buf[0]) != 0) snprintf(b, sizeof buf[0], "<get failed>");
  return b;
}

static void key_name(const struct nd__key *k, char *out, size_t size) {
  snprintf(out, size, "%s.%s", k->section, k->name);
}

/* Whether cfg's architecture takes key k (model.arch). */
static int takes(const nd_config *cfg, const struct nd__key *k) {
  return !k->arch || (k->arch & 1u << cfg->model.arch);
}

/* Whether a and b hold the same value for every key; names the first that differs. */
static int same_values(const nd_config *a, const nd_config *b) {
  char name[160];
  for (size_t i = 0; i < nd__n_keys; i++) {
    key_name(&nd__keys[i], name, sizeof name);
    if (strcmp(get(a, name), get(b, name)) != 0) {
      diag("%s: '%s' vs '%s'", name, get(a, name), get(b, name));
      return 0;
    }
  }
  return 1;
}

static void test_defaults(void) {
  nd_config *def = fresh(), *qs = fresh();
  nd_error err = {0};
  char name[160];
  ok(nd_config_validate(def, &err) == 0, "defaults validate (%s)", err.msg);
  ok(def->model.n_layer == 4 && def->parallelism.pipeline_parallel_size == 2 && def->train.lr == 3e-3 &&
         def->train.seed == 1337 && def->runtime.deterministic == 1 &&
         def->runtime.placement == ND_PLACEMENT_AFFINITY && def->data.format == ND_FORMAT_TEXT &&
         strcmp(def->train.save_dir, "runs/quickstart") == 0 && strcmp(def->runtime.scheduler, "ndws") == 0 &&
         def->parallelism.n_stage_layers == 0 && def->trace.n_steps == 0 && def->kernels.n_overrides == 0,
     "defaults are the quick-start");
  ok(nd_config_load_file(qs, path_of("../../configs/quickstart.yaml"), &err) == 0, "quickstart.yaml loads (%s)",
     err.msg);
  ok(nd_config_validate(qs, &err) == 0, "quickstart.yaml validates");
  int all = 1;
  for (size_t i = 0; i < nd__n_keys; i++) {
    key_name(&nd__keys[i], name, sizeof name);
    if (takes(qs, &nd__keys[i]) && nd__config_loc(qs, name).line == 0) diag("quickstart.yaml lacks %s", name), all = 0;
  }
  ok(all, "quickstart.yaml lists every key of its architecture");
  ok(same_values(def, qs), "quickstart.yaml equals the defaults key by key");
  ok(nd__config_loc(def, "model.n_layer").line == 0, "defaults have no location");
  nd_config_free(def);
  nd_config_free(qs);
}

static void test_good(void) {
  nd_config *def = fresh(), *cfg = fresh();
  nd_error err = {0};
  char name[160];
  ok(nd_config_load_file(cfg, path_of("good/full.yaml"), &err) == 0, "full.yaml loads (%s)", err.msg);
  ok(nd_config_validate(cfg, &err) == 0, "full.yaml validates (%s)", err.msg);
  int all = 1;
  for (size_t i = 0; i < nd__n_keys; i++) {
    key_name(&nd__keys[i], name, sizeof name);
    /* model.arch, data.tokenizer (which needs data.format text): good/llama.yaml */
    if (!takes(cfg, &nd__keys[i]) || strcmp(name, "model.arch") == 0 || strcmp(name, "data.tokenizer") == 0) continue;
    if (strcmp(get(cfg, name), get(def, name)) == 0) diag("%s kept its default", name), all = 0;
  }
  ok(all, "full.yaml changes every key of its architecture");
  nd_config *ll = fresh();
  ok(nd_config_load_file(ll, path_of("good/llama.yaml"), &err) == 0 && nd_config_validate(ll, &err) == 0,
     "llama.yaml loads and validates (%s)", err.msg);
  all = ll->model.arch == ND_ARCH_LLAMA && strcmp(ll->data.tokenizer, "tokenizers/llama.json") == 0;
  for (size_t i = 0; i < nd__n_keys; i++) {
    key_name(&nd__keys[i], name, sizeof name);
    if (nd__keys[i].arch && takes(ll, &nd__keys[i]) && strcmp(get(ll, name), get(def, name)) == 0)
      diag("%s kept its default", name), all = 0;
  }
  ok(all, "llama.yaml changes model.arch and every key only llama takes");
  ok(nd_config_n_kv_head(ll) == 2 && nd_config_intermediate_size(ll) == 344, "llama sizes read");
  nd_config_free(ll);
  ll = fresh();
  nd_config_set(ll, "model.arch", "llama", &err);
  ok(nd_config_n_kv_head(ll) == 4 && nd_config_intermediate_size(ll) == 512,
     "llama defaults: n_kv_head = n_head, intermediate_size 2/3 of 4 * 128 rounded up to 256: %lld",
     (long long)nd_config_intermediate_size(ll));
  nd_config_free(ll);
  ok(cfg->parallelism.n_stage_layers == 3 && cfg->parallelism.stage_layers[2] == 3 &&
         !cfg->parallelism.stage_layers_auto,
     "stage_layers list read");
  ok(cfg->train.lr == 6.0e-4 && cfg->train.seed == UINT64_MAX && cfg->train.grad_clip == 0, "numbers read");
  ok(cfg->data.format == ND_FORMAT_TOKENS_U16 && cfg->runtime.placement == ND_PLACEMENT_STRICT &&
         !cfg->runtime.deterministic && !cfg->trace.flows,
     "enums and booleans read");
  ok(cfg->kernels.n_plugins == 2 && strcmp(cfg->kernels.plugins[1], "plugins/odd name.so") == 0, "plugins read");
  ok(cfg->kernels.n_overrides == 2 && strcmp(cfg->kernels.overrides[1].kind, "gelu") == 0 &&
         strcmp(cfg->kernels.overrides[1].name, "fast-gelu") == 0,
     "overrides read");
  ok(strcmp(get(cfg, "trace.steps"), "[1, 500, 1000]") == 0, "get of a list: %s", get(cfg, "trace.steps"));
  ok(strcmp(get(cfg, "kernels.override"), "{\"matmul\": \"blas\", \"gelu\": \"fast-gelu\"}") == 0,
     "get of a mapping: %s", get(cfg, "kernels.override"));
  ok(strcmp(get(cfg, "data.val"), "data/val.bin") == 0, "get of a string is raw");
  nd_loc l = nd__config_loc(cfg, "train.lr");
  ok(l.line == 25 && l.col == 7 && !l.from_set, "location of a value: %d:%d", l.line, l.col);
  l = nd__config_loc(cfg, "parallelism.stage_layers");
  ok(l.line == 18 && l.col == 5, "location of a block list: %d:%d", l.line, l.col);
  nd_config_free(cfg);

  cfg = fresh();
  ok(nd_config_load_file(cfg, path_of("good/stage_layers_auto.yaml"), &err) == 0 &&
         nd_config_validate(cfg, &err) == 0 && cfg->parallelism.stage_layers_auto &&
         strcmp(get(cfg, "parallelism.stage_layers"), "auto") == 0,
     "stage_layers: auto");
  ok(nd_config_load_file(cfg, path_of("good/stage_layers_list.yaml"), &err) == 0 &&
         nd_config_validate(cfg, &err) == 0 && !cfg->parallelism.stage_layers_auto &&
         strcmp(get(cfg, "parallelism.stage_layers"), "[2, 3, 3]") == 0,
     "a list replaces auto");
  nd_config_free(cfg);

  static const char *const plain[] = {"empty.yaml", "comments_only.yaml", "document_only.yaml", "empty_sections.yaml"};
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    char rel[64];
    snprintf(rel, sizeof rel, "good/%s", plain[i]);
    cfg = fresh();
    ok(nd_config_load_file(cfg, path_of(rel), &err) == 0 && nd_config_validate(cfg, &err) == 0 && same_values(cfg, def),
       "%s: all defaults", plain[i]);
    nd_config_free(cfg);
  }
  cfg = fresh();
  ok(nd_config_load_file(cfg, path_of("good/tags_anchors.yaml"), &err) == 0 && cfg->model.n_layer == 6 &&
         cfg->model.n_head == 2 && cfg->train.lr == 1e-3,
     "tags and anchors are ignored (%s)", err.msg);
  nd_config_free(cfg);
  nd_config_free(def);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Each bad file starts with "# expect: LINE:COL: error: MESSAGE". */
static void test_bad_files(void) {
  char dir[2048];
  char *names[256];
  size_t n = 0;
  snprintf(dir, sizeof dir, "%s", path_of("bad"));
  DIR *d = opendir(dir);
  if (!ok(d != NULL, "open %s", dir)) return;
  struct dirent *e;
  while ((e = readdir(d)) && n < 256) {
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof names[0], by_name);
  ok(n >= 30, "%zu bad configs", n);
  for (size_t i = 0; i < n; i++) {
    char path[2400], line[1024], expected[3500];
    nd_error err = {0};
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    FILE *f = fopen(path, "rb");
    line[0] = '\0';
    if (f) {
      if (!fgets(line, sizeof line, f)) line[0] = '\0';
      fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
    const char *tag = "# expect: ";
    if (strncmp(line, tag, strlen(tag)) != 0) {
      ok(0, "%s has an expect line", names[i]);
      free(names[i]);
      continue;
    }
    snprintf(expected, sizeof expected, "%s:%s", path, line + strlen(tag));
    nd_config *cfg = fresh();
    int rc = nd_config_load_file(cfg, path, &err);
    if (rc == 0) rc = nd_config_validate(cfg, &err);
    int good = rc == ND_ECONFIG && strcmp(err.msg, expected) == 0;
    ok(good, "bad/%s", names[i]);
    if (!good) diag("got  %d %s\n# want %s", rc, err.msg, expected);
    nd_config_free(cfg);
    free(names[i]);
  }
}

static void test_load_edges(void) {
  nd_config *cfg = fresh(), *def = fresh();
  nd_error err = {0};
  size_t big = 1024 * 1024 + 1;
  char *buf = malloc(big);
  memset(buf, '#', big);
  ok(nd_config_load_string(cfg, "big.yaml", buf, big, &err) == ND_ECONFIG &&
         strcmp(err.msg, "big.yaml:1:1: error: file is larger than 1048576 bytes (1 MiB)") == 0,
     "over 1 MiB refused: %s", err.msg);
  free(buf);
  ok(nd_config_load_file(cfg, "/nonexistent/x.yaml", &err) == ND_EIO &&
         strcmp(err.msg, "/nonexistent/x.yaml: error: cannot open: No such file or directory") == 0,
     "missing file: %s", err.msg);
  ok(nd_config_load_string(cfg, NULL, "model: [", 8, &err) == ND_ECONFIG && strncmp(err.msg, "<string>:1:", 11) == 0,
     "unnamed string: %s", err.msg);
  const char *half = "model:\n  n_layer: 8\n  n_head: x\n";
  ok(nd_config_load_string(cfg, "half", half, strlen(half), &err) == ND_ECONFIG && same_values(cfg, def),
     "a failed load changes nothing");
  const char *nul = "model:\n  n_layer: 8\0junk";
  ok(nd_config_load_string(cfg, "nul", nul, 24, &err) == ND_ECONFIG, "NUL byte refused: %s", err.msg);
  const char *esc = "data:\n  train: \"a\\0b\"\n";
  ok(nd_config_load_string(cfg, "esc", esc, strlen(esc), &err) == ND_ECONFIG &&
         strcmp(err.msg, "esc:2:10: error: data.train: must be UTF-8 text without control "
                         "characters") == 0,
     "escaped NUL refused: %s", err.msg);

  /* A key given in an earlier file loses its position (it would be printed
   * with the later file's name): the rule falls back to the section, then 1:1. */
  const char *a = "model:\n  n_embd: 130\n";
  const char *b = "# b\nmodel:\n  activation: relu\n";
  const char *c = "# c\ntrain:\n  steps: 5\n";
  ok(nd_config_load_string(cfg, "a", a, strlen(a), &err) == 0 && nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "a:2:11: error: model.n_embd (130) must be divisible by model.n_head (4)") == 0,
     "cross-key rule at the first key: %s", err.msg);
  ok(nd_config_load_string(cfg, "b", b, strlen(b), &err) == 0 && nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "b:2:1: error: model.n_embd (130) must be divisible by model.n_head (4)") == 0,
     "cross-key rule at the section: %s", err.msg);
  ok(nd_config_load_string(cfg, "c", c, strlen(c), &err) == 0 && nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "c:1:1: error: model.n_embd (130) must be divisible by model.n_head (4)") == 0,
     "cross-key rule at 1:1: %s", err.msg);
  nd_config_free(cfg);
  nd_config_free(def);
}

struct set_case {
  const char *assignment, *expect;
};

static void test_set(void) {
  nd_config *cfg = fresh(), *def = fresh();
  nd_error err = {0};
  static const struct set_case good[] = {
      {"model.n_layer=8", "8"},
      {"train.lr=1e-4", "0.0001"},
      {"train.seed=0", "0"},
      {"train.adam_beta1=0", "0"},
      {"train.adam_beta2=0.999", "0.999"},
      {"train.adam_epsilon=1", "1"},
      {"runtime.deterministic=false", "false"},
      {"runtime.placement=free", "free"},
      {"runtime.scheduler=gpipe", "gpipe"},
      {"data.format=tokens-u16", "tokens-u16"},
      {"train.save_dir=", ""},
      {"data.train=a=b: c # d", "a=b: c # d"},
      {"parallelism.stage_layers=[2,6]", "[2, 6]"},
      {"parallelism.stage_layers=auto", "auto"},
      {"parallelism.stage_layers=", "[]"},
      {"trace.steps=[3, 1]", "[3, 1]"},
      {"kernels.plugins=[a.so, 'b c.so']", "[\"a.so\", \"b c.so\"]"},
      {"kernels.override={matmul: blas}", "{\"matmul\": \"blas\"}"},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char key[128];
    size_t kl = strcspn(good[i].assignment, "=");
    snprintf(key, sizeof key, "%.*s", (int)kl, good[i].assignment);
    int rc = nd_config_set_assignment(cfg, good[i].assignment, &err);
    ok(rc == 0 && strcmp(get(cfg, key), good[i].expect) == 0, "--set %s -> %s", good[i].assignment,
       rc ? err.msg : get(cfg, key));
  }
  nd_loc l = nd__config_loc(cfg, "trace.steps");
  ok(l.line == 1 && l.col == 13 && l.from_set, "--set remembers its column: %d:%d", l.line, l.col);
  ok(nd_config_set(cfg, "model.n_head", "2", &err) == 0 && cfg->model.n_head == 2 &&
         nd__config_loc(cfg, "model.n_head").col == 14,
     "nd_config_set");

  static const struct set_case bad[] = {
      {"model.n_layers=4", "--set:1:1: error: unknown key 'model.n_layers'; did you mean 'model.n_layer'?"},
      {"n_layer=4", "--set:1:1: error: unknown key 'n_layer'; did you mean 'model.n_layer'?"},
      {"modle.n_layer=4", "--set:1:1: error: unknown key 'modle.n_layer'; did you mean 'model.n_layer'?"},
      {"train.momentum=0.9", "--set:1:1: error: unknown key 'train.momentum'"},
      {"model", "--set:1:1: error: expected section.key=value, got 'model'"},
      {"model.n_layer=four", "--set:1:15: error: model.n_layer: expected an integer, got 'four'"},
      {"model.n_layer=", "--set:1:15: error: model.n_layer: expected an integer, got an empty value"},
      {"model.n_layer= 4", "--set:1:15: error: model.n_layer: expected an integer, got ' 4'"},
      {"model.n_layer=0", "--set:1:15: error: model.n_layer: 0 is out of range, expected 1..1024"},
      {"model.seq_len=9223372036854775808",
       "--set:1:15: error: model.seq_len: 9223372036854775808 is out of range, expected 1..65536"},
      {"train.lr=-1", "--set:1:10: error: train.lr: -1 is out of range, expected a number in (0, 10]"},
      {"train.lr=nan", "--set:1:10: error: train.lr: expected a number, got 'nan'"},
      {"train.adam_beta1=1", "--set:1:18: error: train.adam_beta1: 1 is out of range, expected a number in [0, 1)"},
      {"train.adam_beta2=-0.1",
       "--set:1:18: error: train.adam_beta2: -0.1 is out of range, expected a number in [0, 1)"},
      {"train.adam_epsilon=0", "--set:1:20: error: train.adam_epsilon: 0 is out of range, expected a number in (0, 1]"},
      {"runtime.deterministic=1", "--set:1:23: error: runtime.deterministic: expected true or false, got '1'"},
      {"runtime.placement=tight", "--set:1:19: error: runtime.placement: expected one of: strict, affinity, free; got "
                                  "'tight'"},
      {"parallelism.stage_layers=[2,x]",
       "--set:1:29: error: parallelism.stage_layers: expected a list of integers or 'auto', got "
       "'x'"},
      {"parallelism.stage_layers=[2, 0]",
       "--set:1:30: error: parallelism.stage_layers: 0 is out of range, expected 1..1024"},
      {"parallelism.stage_layers=[2,",
       "--set:1:29: error: invalid YAML: did not find expected node content while parsing a flow "
       "node"},
      {"parallelism.stage_layers=2",
       "--set:1:26: error: parallelism.stage_layers: expected a list of integers or 'auto', got "
       "'2'"},
      {"parallelism.stage_layers=*a", "--set:1:26: error: aliases are not supported"},
      {"trace.steps=[1] [2]", "--set:1:17: error: invalid YAML: did not find expected <document start>"},
      {"kernels.override={a: b, a: c}", "--set:1:25: error: duplicate key 'kernels.override.a'"},
      {"kernels.override=[a]", "--set:1:18: error: kernels.override: expected a mapping of KIND: NAME, got a list"},
      {"data.train=\x01", "--set:1:12: error: data.train: must be UTF-8 text without control characters"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nd_config *copy = fresh();
    memcpy(copy, cfg, sizeof *copy);
    int rc = nd_config_set_assignment(cfg, bad[i].assignment, &err);
    int good_msg = rc == ND_ECONFIG && strcmp(err.msg, bad[i].expect) == 0;
    ok(good_msg && memcmp(copy, cfg, sizeof *cfg) == 0, "--set %s refused", bad[i].assignment);
    if (!good_msg) diag("got  %s\n# want %s", err.msg, bad[i].expect);
    nd_config_free(copy);
  }
  ok(nd_config_set(cfg, "model.n_layer", "x", &err) == ND_ECONFIG &&
         strcmp(err.msg, "--set:1:15: error: model.n_layer: expected an integer, got 'x'") == 0,
     "nd_config_set columns count as in key=value");
  nd_config_free(cfg);

  /* Cross-key rules point at --set values, or at the file, whichever was given first. */
  static const struct {
    const char *const sets[3];
    const char *expect;
  } cross[] = {
      {{"model.n_head=5"}, "--set:1:14: error: model.n_embd (128) must be divisible by model.n_head (5)"},
      {{"model.n_embd=96", "model.n_head=64"},
       "--set:1:14: error: model.n_embd (96) must be divisible by model.n_head (64)"},
      {{"parallelism.tensor_parallel_size=3"},
       "--set:1:34: error: the MLP width 4 * model.n_embd (512) must be divisible by "
       "parallelism.tensor_parallel_size (3)"},
      {{"parallelism.pipeline_parallel_size=5"},
       "--set:1:36: error: model.n_layer (4) must be at least parallelism.pipeline_parallel_size "
       "(5): each stage needs a layer"},
      {{"parallelism.stage_layers=[1,1,2]"},
       "--set:1:26: error: parallelism.stage_layers has 3 entries, expected "
       "parallelism.pipeline_parallel_size (2)"},
      {{"parallelism.stage_layers=[1,2]", "model.n_layer=4"},
       "--set:1:26: error: parallelism.stage_layers add up to 3, expected model.n_layer (4)"},
      {{"model.vocab_size=65"},
       "--set:1:18: error: model.vocab_size (65) must be at least 256 for data.format text (one "
       "token per byte)"},
      {{"trace.steps=[301]"}, "--set:1:13: error: trace.steps entry 301 is outside 1..train.steps (300)"},
  };
  for (size_t i = 0; i < sizeof cross / sizeof cross[0]; i++) {
    cfg = fresh();
    int rc = 0;
    for (size_t j = 0; j < 3 && cross[i].sets[j] && rc == 0; j++)
      rc = nd_config_set_assignment(cfg, cross[i].sets[j], &err);
    if (rc == 0) rc = nd_config_validate(cfg, &err);
    int good_msg = rc == ND_ECONFIG && strcmp(err.msg, cross[i].expect) == 0;
    ok(good_msg, "--set %s then validate", cross[i].sets[0]);
    if (!good_msg) diag("got  %s\n# want %s", err.msg, cross[i].expect);
    nd_config_free(cfg);
  }

  cfg = fresh();
  const char *yaml = "# x\nmodel:\n  n_embd: 96\n";
  ok(nd_config_load_string(cfg, "f.yaml", yaml, strlen(yaml), &err) == 0 &&
         nd_config_set_assignment(cfg, "model.n_head=64", &err) == 0 && nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "f.yaml:3:11: error: model.n_embd (96) must be divisible by model.n_head (64)") == 0,
     "file then --set: the file's key comes first: %s", err.msg);
  ok(nd_config_load_string(cfg, "g.yaml", yaml, strlen(yaml), &err) == 0 &&
         nd__config_loc(cfg, "model.n_head").from_set,
     "a later file keeps --set positions");
  nd_config_free(cfg);
  nd_config_free(def);
}

static void test_get(void) {
  nd_config *cfg = fresh();
  char small[4];
  ok(nd_config_get(cfg, "model.nope", small, sizeof small) == ND_EINVAL, "get: unknown key");
  ok(nd_config_get(cfg, "data.train", small, sizeof small) == ND_EINVAL && small[0] == '\0', "get: buffer too small");
  ok(nd_config_get(cfg, "model.n_layer", small, sizeof small) == 0 && strcmp(small, "4") == 0, "get: fits");
  ok(strcmp(get(cfg, "train.lr"), "0.003") == 0 && strcmp(get(cfg, "train.grad_clip"), "1") == 0,
     "get: shortest numbers");
  nd_config_free(cfg);
}

static void test_round_trip(void) {
  nd_config *cfg = fresh(), *back = fresh();
  nd_error err = {0};
  char *y1 = NULL, *y2 = NULL;
  size_t n1 = 0, n2 = 0;
  nd_config_load_file(cfg, path_of("good/full.yaml"), &err);
  ok(nd_config_set_assignment(cfg, "data.train=we\"ird \\ p\xc3\xa4th: #x", &err) == 0 &&
         nd_config_set_assignment(cfg, "train.lr=0.1", &err) == 0 &&
         nd_config_set_assignment(cfg, "train.weight_decay=3.3333333333333335", &err) == 0,
     "odd values set (%s)", err.msg);
  ok(nd_config_dump(cfg, &y1, &n1) == 0 && y1 && n1 == strlen(y1), "dump");
  ok(nd_config_load_string(back, "dump", y1, n1, &err) == 0, "dump loads back (%s)", err.msg);
  ok(same_values(cfg, back), "dump round trip: equal key by key");
  ok(memcmp(&cfg->model, &back->model, sizeof cfg->model) == 0 &&
         memcmp(&cfg->train, &back->train, sizeof cfg->train) == 0 &&
         strcmp(back->data.train, "we\"ird \\ p\xc3\xa4th: #x") == 0,
     "dump round trip: equal bits");
  ok(nd_config_dump(back, &y2, &n2) == 0 && n1 == n2 && strcmp(y1, y2) == 0, "dump is stable");
  free(y1);
  free(y2);
  nd_config_free(back);

  back = fresh();
  ok(nd_config_set_assignment(cfg, "parallelism.stage_layers=auto", &err) == 0 && nd_config_dump(cfg, &y1, &n1) == 0 &&
         nd_config_load_string(back, "dump", y1, n1, &err) == 0 && same_values(cfg, back) &&
         back->parallelism.stage_layers_auto,
     "dump round trip with stage_layers: auto");
  free(y1);
  nd_config_free(back);
  nd_config_free(cfg);
}

/* Values written into the struct directly are checked too. */
static void test_validate_struct(void) {
  nd_config *cfg = fresh();
  nd_error err = {0};
  cfg->model.n_layer = 0;
  ok(nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "<config>:1:1: error: model.n_layer: 0 is out of range, expected 1..1024") == 0,
     "range rechecked: %s", err.msg);
  cfg->model.n_layer = 4;
  cfg->train.adam_beta2 = 1;
  ok(nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "<config>:1:1: error: train.adam_beta2: 1 is out of range, expected a number in [0, 1)") == 0,
     "open upper bound rechecked: %s", err.msg);
  cfg->train.adam_beta2 = 0.95;
  /* in range as a double, not as the float AdamW computes in */
  cfg->train.adam_beta1 = 0.9999999999;
  ok(nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "<config>:1:1: error: train.adam_beta1: 0.9999999999 rounds to 1 in single precision, "
                         "where AdamW computes; at most 0.99999994") == 0,
     "a beta that rounds to 1 in float refused: %s", err.msg);
  cfg->train.adam_beta1 = 0.9;
  cfg->train.adam_epsilon = 1e-50;
  ok(nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "<config>:1:1: error: train.adam_epsilon: 1e-50 rounds to 0 in single "
                         "precision, where AdamW computes; at least 1.40129846e-45") == 0,
     "an epsilon that rounds to 0 in float refused: %s", err.msg);
  cfg->train.adam_epsilon = 1e-8;
  cfg->runtime.placement = (enum nd_placement)7;
  ok(nd_config_validate(cfg, &err) == ND_ECONFIG &&
         strcmp(err.msg, "<config>:1:1: error: runtime.placement: unknown value 7") == 0,
     "enum rechecked: %s", err.msg);
  cfg->runtime.placement = ND_PLACEMENT_FREE;
  memset(cfg->data.train, 'a', sizeof cfg->data.train);
  ok(nd_config_validate(cfg, &err) == ND_ECONFIG, "unterminated string caught: %s", err.msg);
  ok(nd_config_validate(NULL, &err) == ND_EINVAL, "NULL config");
  nd_config_free(cfg);
}

/* --set kernels.override.KIND=NAME adds or replaces one entry of the mapping. */
static void test_set_override_entry(void) {
  nd_config *cfg = fresh();
  nd_error err = {0};
  char buf[256];
  int rc = nd_config_set_assignment(cfg, "kernels.override={matmul_fwd: blas}", &err) ||
           nd_config_set_assignment(cfg, "kernels.override.attention_fwd=flash", &err) ||
           nd_config_set_assignment(cfg, "kernels.override.matmul_fwd=blocked", &err);
  nd_config_get(cfg, "kernels.override", buf, sizeof buf);
  ok(rc == 0 && cfg->kernels.n_overrides == 2 && strcmp(cfg->kernels.overrides[0].name, "blocked") == 0 &&
         strcmp(cfg->kernels.overrides[1].kind, "attention_fwd") == 0,
     "--set kernels.override.KIND=NAME adds and replaces entries (%s)", buf);
  rc = nd_config_set_assignment(cfg, "kernels.override.matmul_fwd=", &err);
  ok(rc == ND_ECONFIG && strcmp(err.msg, "--set:1:29: error: kernels.override.matmul_fwd: a name of 1 to 63 bytes is "
                                         "expected") == 0,
     "an empty override name is refused: %s", err.msg);
  nd_config_free(cfg);
}

int main(void) {
  const char *s = getenv("ND_SRCDIR");
  snprintf(srcdir, sizeof srcdir, "%s", s ? s : ".");
  test_defaults();
  test_good();
  test_bad_files();
  test_load_edges();
  test_set();
  test_set_override_entry();
  test_get();
  test_round_trip();
  test_validate_struct();
  return done_testing();
}
