/* safetensors round trips and corrupt files, atomic files, and checkpoint
 * directories (write, overwrite, latest, a crash's leftovers). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "tests/tap.h"

static char tmpdir[] = "/tmp/nd-test-ckpt-XXXXXX";

static int streq(const char *a, const char *b) {
  if (strcmp(a, b) == 0) return 1;
  diag("got:      %s", a);
  diag("expected: %s", b);
  return 0;
}

static char *tmp_path(const char *name) {
  static char path[8][512];
  static int slot;
  char *p = path[slot++ % 8];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

static void write_bytes(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || (len && fwrite(data, 1, len, f) != len)) {
    perror(path);
    exit(2);
  }
  fclose(f);
}

static uint8_t *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  if (b) b[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* Names in dir that start with '.' (other than . and ..): leftovers. */
static int hidden_entries(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  if (!d) return -1;
  for (struct dirent *de; (de = readdir(d));)
    if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
      diag("leftover %s/%s", dir, de->d_name);
      n++;
    }
  closedir(d);
  return n;
}

/* A hand-made safetensors file: the header text (padded by nothing), an
 * optional forced header length, then data_len zero bytes. */
static const char *craft(const char *name, const char *header, uint64_t force_len, size_t data_len) {
  const char *path = tmp_path(name);
  size_t hl = strlen(header);
  uint64_t n = force_len ? force_len : hl;
  size_t total = 8 + hl + data_len;
  uint8_t *b = calloc(1, total);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
  memcpy(b + 8, header, hl);
  write_bytes(path, b, total);
  free(b);
  return path;
}

/* Opening path fails with ND_ECHECKPOINT and the message "PATH: want". */
static void expect_corrupt(const char *what, const char *path, const char *want) {
  nd_safetensors *st = (nd_safetensors *)&st;
  nd_error err = {0};
  char full[1024];
  snprintf(full, sizeof full, "%s: %s", path, want);
  int rc = nd_safetensors_open(&st, path, &err);
  ok(rc == ND_ECHECKPOINT && err.code == rc && st == NULL && streq(err.msg, full), "%s: %s", what, err.msg);
}

static void test_roundtrip(void) {
  float w[6] = {1, -2, 3.5f, 4, 5, 6e-8f}, bias[3] = {0.25f, -0.5f, 1e30f}, s = 42;
  nd_st_tensor t[] = {
      {"wte.weight", 2, {2, 3}, w},
      {"h.0.ln_1.bias", 1, {3}, bias},
      {"scalar", 0, {0}, &s},
      {"empty", 2, {0, 5}, NULL},
  };
  const char *path = tmp_path("rt.safetensors");
  nd_error err = {0};
  ok(nd_safetensors_write(path, t, 4, &err) == 0, "write 4 tensors (%s)", err.msg);
  ok(hidden_entries(tmpdir) == 0, "no temporary file left after the write");
  char tmpname[600];
  snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", path, (long)getpid());
  ok(access(tmpname, F_OK) != 0, "no PATH.tmp.PID left");

  size_t len = 0;
  uint8_t *b = read_all(path, &len);
  uint64_t n = 0;
  for (int i = 0; i < 8 && b; i++) n |= (uint64_t)b[i] << (8 * i);
  ok(b && n % 8 == 0 && 8 + n + sizeof w + sizeof bias + sizeof s == len,
     "header length %llu is a multiple of 8 and the data follows it", (unsigned long long)n);
  cJSON *h = b ? cJSON_ParseWithLength((const char *)b + 8, n) : NULL;
  cJSON *meta = cJSON_GetObjectItemCaseSensitive(h, "__metadata__");
  cJSON *fmt = cJSON_GetObjectItemCaseSensitive(meta, "format");
  cJSON *wte = cJSON_GetObjectItemCaseSensitive(h, "wte.weight");
  cJSON *offs = cJSON_GetObjectItemCaseSensitive(wte, "data_offsets");
  ok(cJSON_IsString(fmt) && strcmp(fmt->valuestring, "pt") == 0, "__metadata__ says format pt");
  ok(cJSON_GetArraySize(offs) == 2 && cJSON_GetArrayItem(offs, 0)->valuedouble == 0 &&
         cJSON_GetArrayItem(offs, 1)->valuedouble == 24,
     "wte.weight data_offsets [0, 24]");
  cJSON_Delete(h);
  free(b);

  nd_safetensors *st = NULL;
  ok(nd_safetensors_open(&st, path, &err) == 0, "open (%s)", err.msg);
  if (!st) return;
  ok(nd_safetensors_count(st) == 4, "4 tensors");
  ok(strcmp(nd_safetensors_name(st, 0), "wte.weight") == 0 && strcmp(nd_safetensors_name(st, 3), "empty") == 0 &&
         nd_safetensors_name(st, 4) == NULL,
     "names in file order");
  const float *d = NULL;
  int64_t shape[4];
  int ndim = -1;
  ok(nd_safetensors_get(st, "wte.weight", &d, shape, &ndim, &err) == 0 && ndim == 2 && shape[0] == 2 && shape[1] == 3 &&
         memcmp(d, w, sizeof w) == 0 && (uintptr_t)d % 8 == 0,
     "wte.weight: shape [2, 3], same bits, 8-byte aligned");
  ok(nd_safetensors_get(st, "h.0.ln_1.bias", &d, shape, &ndim, &err) == 0 && ndim == 1 && shape[0] == 3 &&
         memcmp(d, bias, sizeof bias) == 0,
     "h.0.ln_1.bias round trip");
  ok(nd_safetensors_get(st, "scalar", &d, shape, &ndim, &err) == 0 && ndim == 0 && *d == 42, "0-d tensor round trip");
  ok(nd_safetensors_get(st, "empty", &d, shape, &ndim, &err) == 0 && ndim == 2 && shape[0] == 0 && shape[1] == 5,
     "empty tensor round trip");
  char want[1024];
  snprintf(want, sizeof want, "%s: no tensor h.0.attn.bias", path);
  ok(nd_safetensors_get(st, "h.0.attn.bias", &d, shape, &ndim, &err) == ND_ECHECKPOINT && streq(err.msg, want),
     "missing tensor: %s", err.msg);
  nd_safetensors_close(st);

  /* Overwriting keeps one file, the new one. */
  float w2[6] = {9, 9, 9, 9, 9, 9};
  t[0].data = w2;
  ok(nd_safetensors_write(path, t, 1, &err) == 0 && nd_safetensors_open(&st, path, &err) == 0 &&
         nd_safetensors_count(st) == 1 && nd_safetensors_get(st, "wte.weight", &d, shape, &ndim, &err) == 0 &&
         d[5] == 9,
     "overwrite replaces the file");
  nd_safetensors_close(st);

  nd_st_tensor bad[] = {{"a", 1, {2}, w}, {"a", 1, {2}, w}};
  ok(nd_safetensors_write(tmp_path("dup.safetensors"), bad, 2, &err) == ND_EINVAL,
     "write: duplicate name rejected (%s)", err.msg);
  bad[1].name = "b";
  bad[1].ndim = 5;
  ok(nd_safetensors_write(tmp_path("dup.safetensors"), bad, 2, &err) == ND_EINVAL, "write: ndim 5 rejected (%s)",
     err.msg);
  ok(hidden_entries(tmpdir) == 0 && access(tmp_path("dup.safetensors"), F_OK) != 0,
     "a rejected write leaves nothing behind");
  ok(nd_safetensors_write("/nonexistent-dir/x.safetensors", t, 1, &err) == ND_EIO &&
         streq(err.msg, "/nonexistent-dir/x.safetensors: cannot create: No such file or directory"),
     "write into a missing directory: %s", err.msg);
}

/* A Hugging Face GPT2LMHeadModel file: "transformer." names, attention
 * buffers that ndgraph never asks for, and an F16 tensor. */
static void test_hf_names(void) {
  const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},"
                    "\"transformer.wte.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                    "\"transformer.h.0.attn.bias\":{\"dtype\":\"BOOL\",\"shape\":[1,1,2,2],\"data_offsets\":[16,20]},"
                    "\"transformer.h.0.attn.masked_bias\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[20,22]},"
                    "\"lm_head.weight\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[24,32]}}";
  /* Pad the header to 8 so that F32 data is aligned. */
  char padded[1024];
  size_t hl = strlen(hdr), pl = (hl + 7) / 8 * 8;
  memcpy(padded, hdr, hl);
  memset(padded + hl, ' ', pl - hl);
  padded[pl] = 0;
  const char *path = craft("hf.safetensors", padded, 0, 32);
  nd_safetensors *st = NULL;
  nd_error err = {0};
  ok(nd_safetensors_open(&st, path, &err) == 0, "HF-style file opens (%s)", err.msg);
  if (!st) return;
  const float *d;
  int64_t shape[4];
  int ndim;
  ok(nd_safetensors_count(st) == 4, "4 tensors, __metadata__ not counted");
  ok(nd_safetensors_get(st, "wte.weight", &d, shape, &ndim, &err) == 0 && ndim == 2 && shape[1] == 2 && d[0] == 0.0f,
     "wte.weight found as transformer.wte.weight");
  ok(nd_safetensors_get(st, "transformer.wte.weight", &d, shape, &ndim, &err) == 0, "the full name works too");
  /* issue 15: fp16 (and bf16) tensors are read as fp32; other dtypes are refused (odd.st below) */
  ok(nd_safetensors_get(st, "lm_head.weight", &d, shape, &ndim, &err) == 0 && ndim == 2 && shape[0] == 2 &&
         d[0] == 0.0f && d[3] == 0.0f,
     "an F16 tensor reads as fp32 (%s)", err.msg);
  nd_safetensors_close(st);
}

#define T_(name, dt, shape, b, e) \
  "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_corrupt(void) {
  char want[256];
  const char *p;

  p = tmp_path("short.st");
  write_bytes(p, "\x10\0\0\0\0", 5);
  expect_corrupt("5-byte file", p, "truncated: 5 bytes, too short for the 8-byte header length");

  p = craft("huge.st", "{}      ", UINT64_MAX, 0);
  expect_corrupt("header length 2^64-1", p, "header length 18446744073709551615 does not fit in the file (16 bytes)");
  p = craft("long.st", "{}      ", 9, 0);
  expect_corrupt("header length one past the end", p, "header length 9 does not fit in the file (16 bytes)");
  /* A sparse file, so that the length fits in the file but not the limit. */
  p = craft("big.st", "{}      ", 200u << 20, 0);
  if (truncate(p, 300 << 20) == 0)
    expect_corrupt("header length over 100 MiB", p, "header length 209715200 exceeds the 100 MiB limit");
  else
    ok(0, "could not make a sparse file");
  unlink(p);
  p = craft("zero.st", "", 0, 0);
  expect_corrupt("header length 0", p, "header length 0 does not fit in the file (8 bytes)");

  /* A good file cut short: the last tensor's data is no longer there. */
  float w[4] = {1, 2, 3, 4};
  nd_st_tensor t[] = {{"a", 1, {2}, w}, {"b", 1, {2}, w + 2}};
  nd_error err = {0};
  p = tmp_path("cut.st");
  if (nd_safetensors_write(p, t, 2, &err) == 0) {
    size_t len;
    uint8_t *b = read_all(p, &len);
    uint64_t n = 0;
    for (int i = 0; i < 8 && b; i++) n |= (uint64_t)b[i] << (8 * i);
    free(b);
    ok(truncate(p, (off_t)(8 + n + 12)) == 0, "cut the file 4 bytes short");
    expect_corrupt("truncated data", p, "tensor b: data_offsets [8, 16] out of range (data area is 12 bytes)");
  } else {
    ok(0, "truncated data: could not set up (%s)", err.msg);
  }

  p = craft("json.st", "{\"a\": {", 0, 0);
  expect_corrupt("bad JSON", p, "header is not valid JSON (at header byte 6)");
  p = craft("trail.st", "{} x    ", 0, 0);
  expect_corrupt("bytes after the JSON", p, "unexpected bytes after the header JSON (at header byte 3)");
  p = craft("array.st", "[1, 2]  ", 0, 0);
  expect_corrupt("not an object", p, "header is not a JSON object");
  p = craft("entry.st", "{\"a\": 3}", 0, 0);
  expect_corrupt("entry not an object", p, "tensor a: header entry is not an object");
  p = craft("nodtype.st", "{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 0, 4);
  expect_corrupt("no dtype", p, "tensor a: missing or invalid dtype");
  p = craft("noshape.st", "{" T_("a", "F32", "3", 0, 4) "}", 0, 4);
  expect_corrupt("shape not an array", p, "tensor a: missing or invalid shape");
  p = craft("negshape.st", "{" T_("a", "F32", "[2,-1]", 0, 4) "}", 0, 4);
  expect_corrupt("negative dimension", p, "tensor a: shape[1] is not a non-negative integer");
  p = craft("fracshape.st", "{" T_("a", "F32", "[1.5]", 0, 4) "}", 0, 4);
  expect_corrupt("fractional dimension", p, "tensor a: shape[0] is not a non-negative integer");
  p = craft("offs.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 0, 4);
  expect_corrupt("one data offset", p, "tensor a: data_offsets is not a pair of non-negative integers");
  p = craft("range.st", "{" T_("a", "F32", "[2]", 0, 8) "}", 0, 4);
  expect_corrupt("offsets out of range", p, "tensor a: data_offsets [0, 8] out of range (data area is 4 bytes)");
  p = craft("rev.st", "{" T_("a", "F32", "[0]", 4, 0) "}", 0, 4);
  expect_corrupt("begin after end", p, "tensor a: data_offsets [4, 0] out of range (data area is 4 bytes)");
  p = craft("size.st", "{" T_("a", "F32", "[3]", 0, 8) "}", 0, 8);
  expect_corrupt("size vs shape", p,
                 "tensor a: data_offsets span 8 bytes, but its shape and dtype F32 need a different size");
  p = craft("ovf.st", "{" T_("a", "F32", "[4294967296,4294967296,4294967296]", 0, 8) "}", 0, 8);
  expect_corrupt("shape overflow", p,
                 "tensor a: data_offsets span 8 bytes, but its shape and dtype F32 need more than 2^64");
  p = craft("overlap.st", "{" T_("a", "F32", "[2]", 0, 8) "," T_("b", "F32", "[2]", 4, 12) "}", 0, 12);
  expect_corrupt("overlap", p, "tensors a and b overlap in the data area");
  p = craft("dup.st", "{" T_("a", "F32", "[1]", 0, 4) "," T_("a", "F32", "[1]", 4, 8) "}", 0, 8);
  expect_corrupt("duplicate name", p, "tensor a appears twice in the header");
  p = craft("meta.st", "{\"__metadata__\": {\"format\": 1}}", 0, 0);
  expect_corrupt("metadata not strings", p, "__metadata__ is not a map of strings");

  /* Unknown dtypes and other tensors load; only asking for them fails. */
  p = craft("odd.st", "{" T_("x", "Q4", "[7]", 0, 3) "," T_("y", "F32", "[0]", 3, 3) "}", 0, 3);
  nd_safetensors *st = NULL;
  const float *d;
  int64_t shape[4];
  int ndim;
  snprintf(want, sizeof want, "%s: tensor x has dtype Q4, only F32, BF16 and F16 are supported", p);
  ok(nd_safetensors_open(&st, p, &err) == 0 && nd_safetensors_count(st) == 2 &&
         nd_safetensors_get(st, "x", &d, shape, &ndim, &err) == ND_ECHECKPOINT && streq(err.msg, want),
     "unknown dtype: opens, and get names the tensor (%s)", err.msg);
  /* y sits at data byte 3: not aligned for floats, so it is refused, not misread. */
  snprintf(want, sizeof want, "%s: tensor y is not 4-byte aligned in the file", p);
  ok(st && nd_safetensors_get(st, "y", &d, shape, &ndim, &err) == ND_ECHECKPOINT && streq(err.msg, want),
     "misaligned F32 data refused: %s", err.msg);
  nd_safetensors_close(st);

  p = tmp_path("nothere.st");
  snprintf(want, sizeof want, "%s: cannot open: No such file or directory", p);
  ok(nd_safetensors_open(&st, p, &err) == ND_ECHECKPOINT && st == NULL && streq(err.msg, want), "missing file: %s",
     err.msg);
}

static void test_atomic_file(void) {
  const char *p = tmp_path("note.txt");
  nd_error err = {0};
  size_t len = 0;
  ok(nd_write_file_atomic(p, "first", 5, &err) == 0 && nd_write_file_atomic(p, "second", 6, &err) == 0,
     "atomic file: write twice (%s)", err.msg);
  uint8_t *b = read_all(p, &len);
  ok(b && len == 6 && memcmp(b, "second", 6) == 0, "atomic file: the second content wins");
  free(b);
  int wrote = nd_write_file_atomic(tmp_path("zero"), "", 0, &err) == 0;
  b = read_all(tmp_path("zero"), &len);
  ok(wrote && b && len == 0, "atomic file: empty content");
  free(b);
  ok(hidden_entries(tmpdir) == 0, "atomic file: no temporary left");
  char want[600];
  snprintf(want, sizeof want, "%s/no/such/dir/f: cannot create: No such file or directory", tmpdir);
  ok(nd_write_file_atomic(tmp_path("no/such/dir/f"), "x", 1, &err) == ND_EIO && streq(err.msg, want),
     "atomic file: missing directory: %s", err.msg);
}

/* What a path may name besides a file: none of it is replaced by one. */
static void test_atomic_special(void) {
  nd_error err = {0};
  char want[600];
  size_t len = 0;
  const char *target = tmp_path("target.txt"), *link = tmp_path("link.txt");
  struct stat st;
  snprintf(want, sizeof want, "%s: a symbolic link to nothing, not a file to write", link);
  ok(symlink("target.txt", link) == 0 && nd_write_file_atomic(link, "via", 3, &err) == ND_EIO && streq(err.msg, want) &&
         lstat(link, &st) == 0 && S_ISLNK(st.st_mode),
     "atomic file: a dangling symbolic link is refused and stays");
  write_bytes(target, "old", 3);
  ok(nd_write_file_atomic(link, "via", 3, &err) == 0 && lstat(link, &st) == 0 && S_ISLNK(st.st_mode),
     "atomic file: a symbolic link stays a link (%s)", err.msg);
  uint8_t *b = read_all(target, &len);
  ok(b && len == 3 && memcmp(b, "via", 3) == 0, "atomic file: and its target has the content");
  free(b);
  ok(nd_write_file_atomic("/dev/null", "x", 1, &err) == 0 && stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode),
     "atomic file: /dev/null is written in place, not replaced (%s)", err.msg);
  if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
    ok(nd_write_file_atomic("/dev/full", "x", 1, &err) == ND_EIO &&
           streq(err.msg, "/dev/full: cannot write: No space left on device") && stat("/dev/full", &st) == 0 &&
           S_ISCHR(st.st_mode),
       "atomic file: /dev/full fails with its reason and stays a device");
  } else {
    ok(1, "# SKIP no /dev/full");
  }
  const char *fifo = tmp_path("fifo");
  snprintf(want, sizeof want, "%s: cannot open: a FIFO that nobody reads", fifo);
  ok(mkfifo(fifo, 0600) == 0 && nd_write_file_atomic(fifo, "x", 1, &err) == ND_EIO && streq(err.msg, want),
     "atomic file: a FIFO without a reader is an error, not a hang");
  snprintf(want, sizeof want, "%s: a directory, not a file to write", tmpdir);
  ok(nd_write_file_atomic(tmpdir, "x", 1, &err) == ND_EIO && streq(err.msg, want), "atomic file: a directory: %s",
     err.msg);
  /* the same answers before anything is written */
  ok(nd_check_writable(tmp_path("new.json"), &err) == 0 && nd_check_writable(target, &err) == 0 &&
         nd_check_writable("/dev/null", &err) == 0 && nd_check_writable(fifo, &err) == 0,
     "check writable: a new file, a file, a device, a FIFO (%s)", err.msg);
  unlink(target);
  snprintf(want, sizeof want, "%s: a symbolic link to nothing, not a file to write", link);
  ok(nd_check_writable(link, &err) == ND_EIO && streq(err.msg, want), "check writable: a dangling link");
  snprintf(want, sizeof want, "%s/no/such/f: cannot create: No such file or directory", tmpdir);
  ok(nd_check_writable(tmp_path("no/such/f"), &err) == ND_EIO && streq(err.msg, want),
     "check writable: a missing directory");
  ok(nd_check_writable(tmpdir, &err) == ND_EIO, "check writable: a directory");
  unlink(fifo);
  unlink(link);
}

static void test_hf_config(void) {
  char *js = NULL;
  ok(nd_hf_config_json(&js, 50257, 1024, 768, 12, 12) == 0 && js, "hf config: built");
  cJSON *c = cJSON_Parse(js ? js : "");
  cJSON *arch = cJSON_GetObjectItemCaseSensitive(c, "architectures");
#define NUM(k) (cJSON_GetObjectItemCaseSensitive(c, k) ? cJSON_GetObjectItemCaseSensitive(c, k)->valuedouble : -1)
#define STR(k) \
  (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, k)) ? cJSON_GetObjectItemCaseSensitive(c, k)->valuestring : "")
  ok(c && strcmp(STR("model_type"), "gpt2") == 0 && cJSON_GetArraySize(arch) == 1 &&
         strcmp(cJSON_GetArrayItem(arch, 0)->valuestring, "GPT2LMHeadModel") == 0,
     "hf config: gpt2, GPT2LMHeadModel");
  ok(NUM("vocab_size") == 50257 && NUM("n_positions") == 1024 && NUM("n_ctx") == 1024 && NUM("n_embd") == 768 &&
         NUM("n_layer") == 12 && NUM("n_head") == 12,
     "hf config: sizes");
  ok(NUM("layer_norm_epsilon") == 1e-5 && strcmp(STR("activation_function"), "gelu_new") == 0,
     "hf config: epsilon 1e-5, gelu_new");
  ok(NUM("bos_token_id") == 50256 && NUM("eos_token_id") == 50256 && strcmp(STR("torch_dtype"), "float32") == 0,
     "hf config: bos/eos the last id (50256), torch_dtype float32");
  cJSON_Delete(c);
  free(js);
  nd_hf_llama m = {256, 64, 32, 48, 2, 4, 2, 1e-5, 500000.0, 0, 1.0, 1.0, 4.0, 8192};
  ok(nd_hf_llama_config_json(&js, &m) == 0 && js, "hf llama config: built");
  c = cJSON_Parse(js ? js : "");
  cJSON *rope = cJSON_GetObjectItemCaseSensitive(c, "rope_parameters");
  const cJSON *theta = cJSON_GetObjectItemCaseSensitive(rope, "rope_theta"),
              *type = cJSON_GetObjectItemCaseSensitive(rope, "rope_type");
  ok(NUM("bos_token_id") == 255 && NUM("eos_token_id") == 255 && strcmp(STR("torch_dtype"), "float32") == 0 &&
         cJSON_IsNumber(theta) && theta->valuedouble == 500000.0 && cJSON_IsString(type) &&
         strcmp(type->valuestring, "default") == 0,
     "hf llama config: bos/eos 255 of 256, torch_dtype, rope_parameters {default, 500000}");
  cJSON_Delete(c);
  free(js);
  m.rope_factor = 8, m.rope_original_context = 4096;
  ok(nd_hf_llama_config_json(&js, &m) == 0 && js, "hf llama config with llama3 scaling: built");
  c = cJSON_Parse(js ? js : "");
  const cJSON *keys[2] = {cJSON_GetObjectItemCaseSensitive(c, "rope_parameters"),
                          cJSON_GetObjectItemCaseSensitive(c, "rope_scaling")};
  int good = 1;
  for (int i = 0; i < 2; i++) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(keys[i], "rope_type");
    good &= cJSON_IsString(t) && strcmp(t->valuestring, "llama3") == 0 &&
            cJSON_GetObjectItemCaseSensitive(keys[i], "factor")->valuedouble == 8 &&
            cJSON_GetObjectItemCaseSensitive(keys[i], "low_freq_factor")->valuedouble == 1 &&
            cJSON_GetObjectItemCaseSensitive(keys[i], "high_freq_factor")->valuedouble == 4 &&
            cJSON_GetObjectItemCaseSensitive(keys[i], "original_max_position_embeddings")->valuedouble == 4096;
  }
  ok(good, "hf llama config: rope_parameters and rope_scaling {llama3, 8, 1, 4, 4096}");
#undef NUM
#undef STR
  cJSON_Delete(c);
  free(js);
  js = (char *)1;
  ok(nd_hf_config_json(&js, 0, 1024, 768, 12, 12) == ND_EINVAL && js == NULL, "hf config: vocab_size 0 rejected");
}

/* Writes a checkpoint whose one model tensor holds value v. */
static int write_ckpt(const char *dir, int64_t step, float v, nd_error *err) {
  float w[4] = {v, v, v, v}, m[4] = {0}, s[4] = {1, 1, 1, 1};
  nd_st_tensor model[] = {{"wte.weight", 2, {2, 2}, w}};
  nd_st_tensor opt[] = {{"m.wte.weight", 2, {2, 2}, m}, {"v.wte.weight", 2, {2, 2}, s}};
  char *cfg = NULL, state[128];
  if (nd_hf_config_json(&cfg, 4, 8, 2, 1, 1)) return ND_ENOMEM;
  snprintf(state, sizeof state, "{\"step\": %lld, \"data_position\": 12}", (long long)step);
  nd_checkpoint_files f = {model, 1, opt, 2, cfg, state};
  int rc = nd_checkpoint_write(dir, step, &f, err);
  free(cfg);
  return rc;
}

/* The value stored in DIR/model.safetensors wte.weight[0], or -1. */
static float model_value(const char *dir) {
  char p[1024];
  snprintf(p, sizeof p, "%s/model.safetensors", dir);
  nd_safetensors *st = NULL;
  const float *d;
  int64_t shape[4];
  int ndim;
  float v = -1;
  if (nd_safetensors_open(&st, p, NULL) == 0 && nd_safetensors_get(st, "wte.weight", &d, shape, &ndim, NULL) == 0)
    v = d[0];
  nd_safetensors_close(st);
  return v;
}

static void test_checkpoint_dir(void) {
  char save[600], path[1024], want[1400], sub[1200];
  nd_error err = {0};
  snprintf(save, sizeof save, "%s/runs/a/ckpt", tmpdir);

  snprintf(want, sizeof want, "%s: cannot open directory: No such file or directory", save);
  ok(nd_checkpoint_latest(save, path, sizeof path, &err) == ND_EIO && streq(err.msg, want),
     "latest: missing save_dir is ND_EIO");

  ok(write_ckpt(save, 5, 5.0f, &err) == 0, "write step 5, creating the parents (%s)", err.msg);
  const char *names[] = {"model.safetensors", "optimizer.safetensors", "config.json", "state.json"};
  int all = 1;
  for (int i = 0; i < 4; i++) {
    snprintf(sub, sizeof sub, "%s/step-5/%s", save, names[i]);
    all &= access(sub, R_OK) == 0;
  }
  ok(all, "step-5 holds the four files");
  snprintf(sub, sizeof sub, "%s/step-5", save);
  ok(model_value(sub) == 5.0f, "step-5 model reads back");
  ok(nd_checkpoint_latest(save, path, sizeof path, &err) == 0 && streq(path, sub), "latest is step-5");

  ok(write_ckpt(save, 10, 10.0f, &err) == 0, "write step 10");
  snprintf(sub, sizeof sub, "%s/step-10", save);
  ok(nd_checkpoint_latest(save, path, sizeof path, &err) == 0 && streq(path, sub),
     "latest is step-10 (numeric order, not text order)");

  ok(write_ckpt(save, 10, 11.0f, &err) == 0, "overwrite step 10 (%s)", err.msg);
  ok(model_value(sub) == 11.0f, "step-10 now holds the new model");
  ok(hidden_entries(save) == 0, "no .tmp or .old directory left");

  /* A crash while writing step 7 leaves its temporary directory; a
   * hand-made step-99 lacks files; other names are not checkpoints. */
  snprintf(sub, sizeof sub, "%s/.step-7.tmp-123", save);
  mkdir(sub, 0777);
  snprintf(sub, sizeof sub, "%s/.step-70.tmp-123", save);
  mkdir(sub, 0777);
  snprintf(sub, sizeof sub, "%s/step-99", save);
  mkdir(sub, 0777);
  snprintf(sub, sizeof sub, "%s/step-99/config.json", save);
  write_bytes(sub, "{}", 2);
  snprintf(sub, sizeof sub, "%s/step-12x", save);
  mkdir(sub, 0777);
  snprintf(sub, sizeof sub, "%s/step-10", save);
  ok(nd_checkpoint_latest(save, path, sizeof path, &err) == 0 && streq(path, sub),
     "latest ignores .tmp leftovers, incomplete and misnamed directories");
  char tiny[8];
  ok(nd_checkpoint_latest(save, tiny, sizeof tiny, &err) == ND_EINVAL, "latest: small buffer (%s)", err.msg);

  ok(write_ckpt(save, 7, 7.0f, &err) == 0, "step 7 written despite its leftover");
  snprintf(sub, sizeof sub, "%s/.step-7.tmp-123", save);
  ok(access(sub, F_OK) == 0, "another process's leftover is left alone");

  /* A write that fails (a file size limit standing in for a full disk):
   * the error names the checkpoint, not its temporary, and step 7 stays. */
  struct rlimit lim, small = {64, 64};
  getrlimit(RLIMIT_FSIZE, &lim);
  small.rlim_max = lim.rlim_max;
  void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &small);
  int rc = write_ckpt(save, 7, 8.0f, &err);
  setrlimit(RLIMIT_FSIZE, &lim);
  signal(SIGXFSZ, was);
  snprintf(want, sizeof want, "%s/step-7/model.safetensors: cannot write: ", save);
  ok(rc == ND_EIO && strncmp(err.msg, want, strlen(want)) == 0, "a failed write names step-7's file: %s", err.msg);
  snprintf(sub, sizeof sub, "%s/step-7", save);
  char mine[64];
  snprintf(mine, sizeof mine, ".step-7.tmp-%ld", (long)getpid());
  int ours = 0;
  DIR *own = opendir(save);
  for (struct dirent *de; own && (de = readdir(own));) ours += strcmp(de->d_name, mine) == 0;
  if (own) closedir(own);
  ok(model_value(sub) == 7.0f && ours == 0, "and step 7 keeps its model, no temporary of ours left");

  char empty[600];
  snprintf(empty, sizeof empty, "%s/empty", tmpdir);
  mkdir(empty, 0777);
  snprintf(want, sizeof want, "%s: no complete step-N checkpoint", empty);
  ok(nd_checkpoint_latest(empty, path, sizeof path, &err) == ND_ECHECKPOINT && streq(err.msg, want),
     "latest: empty save_dir is ND_ECHECKPOINT");

  nd_checkpoint_files f = {NULL, 0, NULL, 0, "{}", "{not json"};
  ok(nd_checkpoint_write(save, 3, &f, &err) == ND_EINVAL && streq(err.msg, "state.json: content is not valid JSON"),
     "invalid state.json rejected: %s", err.msg);
  snprintf(sub, sizeof sub, "%s/step-3", save);
  ok(access(sub, F_OK) != 0, "and nothing was written");

  /* A failure half way (a bad tensor) leaves no trace. */
  nd_st_tensor bad[] = {{"x", 9, {0}, NULL}};
  nd_checkpoint_files g = {bad, 1, NULL, 0, "{}", "{}"};
  ok(nd_checkpoint_write(save, 4, &g, &err) == ND_EINVAL, "bad tensor rejected: %s", err.msg);
  snprintf(sub, sizeof sub, "%s/step-4", save);
  int leftovers = 0;
  DIR *d = opendir(save);
  for (struct dirent *de; d && (de = readdir(d));) leftovers += strncmp(de->d_name, ".step-4", 7) == 0;
  if (d) closedir(d);
  ok(access(sub, F_OK) != 0 && leftovers == 0, "and no step-4 or .step-4.* is left");

  /* save_dir that is a file. */
  snprintf(sub, sizeof sub, "%s/plainfile", tmpdir);
  write_bytes(sub, "x", 1);
  snprintf(want, sizeof want, "%s: cannot create directory: exists and is not a directory", sub);
  ok(write_ckpt(sub, 1, 1.0f, &err) == ND_EIO && streq(err.msg, want), "save_dir is a file: %s", err.msg);
}

int main(void) {
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 2;
  }
  test_roundtrip();
  test_hf_names();
  test_corrupt();
  test_atomic_file();
  test_atomic_special();
  test_hf_config();
  test_checkpoint_dir();
  nd_error err = {0};
  ok(nd__remove_tree(tmpdir, &err) == 0 && access(tmpdir, F_OK) != 0, "temporary files removed");
  return done_testing();
}
