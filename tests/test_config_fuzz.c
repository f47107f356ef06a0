/* A deterministic stand-in for the libFuzzer run (scripts/fuzz-config.sh) that
 * `make check` can afford: the seed corpus of tests/configs and thousands of
 * mutations of it go through the loader and --set, which must return 0 or
 * ND_ECONFIG with a one-line message, never crash (ASan builds catch the rest). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "tap.h"

#define MAX_SEEDS 256
#define MUTATIONS 4000

static char *seeds[MAX_SEEDS];
static size_t seed_len[MAX_SEEDS], n_seeds;
static uint64_t rng = 0x9e3779b97f4a7c15u;
static int failures;

static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static size_t below(size_t n) { return n ? (size_t)(next_rand() % n) : 0; }

static void read_seeds(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) && n_seeds < MAX_SEEDS) {
    char path[4096];
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    char *buf = malloc(65536);
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;
    fclose(f);
    if (!buf) continue;
    seeds[n_seeds] = buf;
    seed_len[n_seeds++] = n;
  }
  closedir(d);
}

/* The property every input must keep; the first breach is shown. */
static void expect(int cond, const char *what, const char *input, size_t len) {
  if (cond) return;
  if (failures++ == 0) {
    diag("%s; input (%zu bytes):", what, len);
    fwrite(input, 1, len, stdout);
    printf("\n");
  }
}

static void check_rc(int rc, const nd_error *err, const char *input, size_t len) {
  expect(rc == 0 || rc == ND_ECONFIG, "unexpected return code", input, len);
  if (rc == ND_ECONFIG)
    expect(strchr(err->msg, '\n') == NULL && strstr(err->msg, ": error: ") != NULL,
           "message not one line FILE:LINE:COL: error: ...", input, len);
}

static void run(const char *input, size_t len) {
  nd_config *cfg = NULL, *back = NULL;
  nd_error err = {0};
  char *yaml = NULL, *text = NULL;
  size_t ylen = 0;
  if (nd_config_new(&cfg) != 0 || nd_config_new(&back) != 0) goto cleanup;
  int rc = nd_config_load_string(cfg, "fuzz", input, len, &err);
  check_rc(rc, &err, input, len);
  if (rc == 0) {
    check_rc(nd_config_validate(cfg, &err), &err, input, len);
    expect(nd_config_dump(cfg, &yaml, &ylen) == 0, "dump failed", input, len);
    expect(yaml && nd_config_load_string(back, "dump", yaml, ylen, &err) == 0, "dump did not load back", input, len);
  }
  text = malloc(len + 1);
  if (!text) goto cleanup;
  memcpy(text, input, len);
  text[len] = '\0';
  check_rc(nd_config_set_assignment(cfg, text, &err), &err, input, len);
cleanup:
  free(text);
  free(yaml);
  nd_config_free(back);
  nd_config_free(cfg);
}

static const char *const punctuation[] = {
    ":",           "- ",    "[",      "]",          "{",       "}",     ",",
    "&a ",         "*a",    "!!str ", "!x ",        "# ",      "'",     "\"",
    "\n",          "  ",    "? ",     "|\n",        ">\n",     "---\n", "...\n",
    "%YAML 1.1\n", "\t",    "\xff",   "\\",         "~",       "\0",    "99999999999999999999999",
    "-",           "1e999", "auto",   "model:\n  ", "n_layer", ".",     "="};

static size_t mutate(char *buf, size_t len, size_t cap) {
  size_t rounds = 1 + below(4);
  for (size_t r = 0; r < rounds; r++) {
    switch (below(5)) {
    case 0: /* flip a bit */
      if (len) buf[below(len)] ^= (char)(1u << below(8));
      break;
    case 1: /* truncate */
      len = below(len + 1);
      break;
    case 2: { /* insert punctuation */
      size_t i = below(sizeof punctuation / sizeof punctuation[0]);
      const char *p = punctuation[i];
      size_t pl = p[0] ? strlen(p) : 1;
      if (len + pl > cap) break;
      size_t at = below(len + 1);
      memmove(buf + at + pl, buf + at, len - at);
      memcpy(buf + at, p, pl);
      len += pl;
      break;
    }
    case 3: { /* delete a span */
      if (!len) break;
      size_t at = below(len), n = 1 + below(len - at);
      memmove(buf + at, buf + at + n, len - at - n);
      len -= n;
      break;
    }
    default: { /* duplicate a span, to make repeated keys and nesting */
      if (!len) break;
      size_t at = below(len), n = 1 + below(len - at < 64 ? len - at : 64);
      if (len + n > cap) break;
      memmove(buf + at + n, buf + at, len - at);
      len += n;
      break;
    }
    }
  }
  return len;
}

static void run_repeated(const char *head, const char *unit, size_t times, const char *tail) {
  size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
  size_t len = hl + ul * times + tl;
  char *buf = malloc(len);
  if (!buf) return;
  memcpy(buf, head, hl);
  for (size_t i = 0; i < times; i++) memcpy(buf + hl + i * ul, unit, ul);
  memcpy(buf + hl + ul * times, tail, tl);
  run(buf, len);
  free(buf);
}

int main(void) {
  const char *src = getenv("ND_SRCDIR");
  char dir[4096];
  if (!src) src = ".";
  snprintf(dir, sizeof dir, "%s/tests/configs/good", src);
  read_seeds(dir);
  snprintf(dir, sizeof dir, "%s/tests/configs/bad", src);
  read_seeds(dir);
  snprintf(dir, sizeof dir, "%s/configs", src);
  read_seeds(dir);
  ok(n_seeds >= 30, "%zu seeds", n_seeds);

  for (size_t i = 0; i < n_seeds; i++) run(seeds[i], seed_len[i]);
  ok(failures == 0, "seed corpus");

  failures = 0;
  run_repeated("", "[", 200000, "");
  run_repeated("model:\n  n_layer: ", "[", 200000, "");
  run_repeated("kernels:\n  override: ", "{a: ", 50000, "");
  run_repeated("a: &a [", "x, ", 100000, "]\nb: *a\n");
  run_repeated("model:\n  ", "n_layer", 20000, ": 4\n");
  run_repeated("train:\n  seed: ", "9", 100000, "\n");
  run_repeated("trace:\n  steps: [", "1, ", 100000, "1]\n");
  run_repeated("", "# comment\n", 100000, "");
  run_repeated("model.activation=", "\xc3\xa4", 100, "");
  ok(failures == 0, "deep nesting, long values, many entries");

  failures = 0;
  enum { CAP = 70000 };
  char *buf = malloc(CAP);
  for (int i = 0; i < MUTATIONS && buf && n_seeds; i++) {
    size_t s = below(n_seeds);
    memcpy(buf, seeds[s], seed_len[s]);
    size_t len = mutate(buf, seed_len[s], CAP);
    run(buf, len);
  }
  free(buf);
  ok(failures == 0, "%d mutations", MUTATIONS);

  for (size_t i = 0; i < n_seeds; i++) free(seeds[i]);
  return done_testing();
}
