/* Reading and writing safetensors files: the JSON header checked field by
 * field against the file's size before any tensor is read. */
#include "checkpoint/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic.h"
#include "common/error.h"

/* Tensor data is written and read as host floats. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; byte swapping is not implemented"
#endif

#define METADATA_KEY "__metadata__"
#define PREFIX       "transformer."
#define MAX_DIMS     16 /* kept for tensors we skip; nd_safetensors_get serves up to 4 */
/* Offsets and sizes must be exact in a double (cJSON's number type). */
#define MAX_EXACT    9007199254740992.0 /* 2^53 */
/* As the reference implementation: a header beyond this is not a real one,
 * and parsing gigabytes of JSON from a corrupt length would only waste time. */
#define MAX_HEADER   (100u << 20)

/* ------------------------------------------------------------------ write */

static cJSON *raw_int(int64_t v) {
  /* Raw text, not cJSON numbers: cJSON prints doubles, which for values
   * over 2^31 may come out in exponent form that other readers reject. */
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return cJSON_CreateRaw(buf);
}

/* Adds an array of integers to obj; 0 on success. */
static int add_int_array(cJSON *obj, const char *key, const int64_t *v, int n) {
  cJSON *a = cJSON_AddArrayToObject(obj, key);
  if (!a) return -1;
  for (int i = 0; i < n; i++) {
    cJSON *x = raw_int(v[i]);
    if (!x) return -1;
    cJSON_AddItemToArray(a, x);
  }
  return 0;
}

/* Checks one tensor to write and returns its size in bytes in *bytes. */
static int check_tensor(const char *path, const nd_st_tensor *t, int i, uint64_t *bytes, nd_error *err) {
  if (!t->name || !*t->name) return nd__fail(err, ND_EINVAL, "%s: tensor %d has no name", path, i);
  if (strcmp(t->name, METADATA_KEY) == 0)
    return nd__fail(err, ND_EINVAL, "%s: tensor name %s is reserved", path, t->name);
  if (t->ndim < 0 || t->ndim > 4)
    return nd__fail(err, ND_EINVAL, "%s: tensor %s: ndim %d is not in 0..4", path, t->name, t->ndim);
  uint64_t n = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] < 0)
      return nd__fail(err, ND_EINVAL, "%s: tensor %s: negative dimension %" PRId64, path, t->name, t->shape[d]);
    if (__builtin_mul_overflow(n, (uint64_t)t->shape[d], &n) || n > (uint64_t)MAX_EXACT / 4)
      return nd__fail(err, ND_EINVAL, "%s: tensor %s: too many elements", path, t->name);
  }
  if (n > 0 && !t->data) return nd__fail(err, ND_EINVAL, "%s: tensor %s has no data", path, t->name);
  *bytes = n * 4;
  return 0;
}

int nd_safetensors_write(const char *path, const nd_st_tensor *tensors, int n, nd_error *err) {
  int rc = 0;
  cJSON *root = NULL;
  char *json = NULL;
  uint64_t *sizes = NULL;
  nd__atomic_file f = {.fd = -1};
  int opened = 0;

  if (n < 0 || (n > 0 && !tensors)) return nd__fail(err, ND_EINVAL, "%s: invalid tensor list (n = %d)", path, n);
  sizes = calloc((size_t)n + 1, sizeof *sizes);
  root = cJSON_CreateObject();
  if (!sizes || !root) goto nomem;

  uint64_t offset = 0;
  for (int i = 0; i < n; i++) {
    const nd_st_tensor *t = &tensors[i];
    rc = check_tensor(path, t, i, &sizes[i], err);
    if (rc) goto out;
    /* A duplicate name would make the header ambiguous; readers differ on which wins. */
    if (cJSON_GetObjectItemCaseSensitive(root, t->name)) {
      rc = nd__fail(err, ND_EINVAL, "%s: tensor %s appears twice", path, t->name);
      goto out;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o) goto nomem;
    cJSON_AddItemToObject(root, t->name, o);
    int64_t offs[2] = {(int64_t)offset, (int64_t)(offset + sizes[i])};
    if (!cJSON_AddStringToObject(o, "dtype", "F32") || add_int_array(o, "shape", t->shape, t->ndim) ||
        add_int_array(o, "data_offsets", offs, 2))
      goto nomem;
    offset += sizes[i];
  }
  cJSON *meta = cJSON_AddObjectToObject(root, METADATA_KEY);
  if (!meta || !cJSON_AddStringToObject(meta, "format", "pt")) goto nomem;
  json = cJSON_PrintUnformatted(root);
  if (!json) goto nomem;

  /* Pad with spaces so that the data, and hence every F32 tensor, starts
   * 8-byte aligned in a mapping of the file. */
  size_t hlen = strlen(json), padded = (hlen + 7) / 8 * 8;
  char *h = realloc(json, padded);
  if (!h) goto nomem;
  json = h;
  memset(json + hlen, ' ', padded - hlen);
  uint8_t len8[8];
  for (int b = 0; b < 8; b++) len8[b] = (uint8_t)((uint64_t)padded >> (8 * b));

  rc = nd__atomic_open(&f, path, err);
  if (rc) goto out;
  opened = 1;
  rc = nd__atomic_write(&f, len8, sizeof len8, err);
  if (!rc) rc = nd__atomic_write(&f, json, padded, err);
  for (int i = 0; i < n && !rc; i++)
    if (sizes[i]) rc = nd__atomic_write(&f, tensors[i].data, (size_t)sizes[i], err);
  if (rc) goto out;
  opened = 0; /* commit frees f whether or not it succeeds */
  rc = nd__atomic_commit(&f, err);
  goto out;
nomem:
  rc = nd__fail(err, ND_ENOMEM, "%s: out of memory building the header", path);
out:
  if (opened) nd__atomic_abort(&f);
  free(json);
  cJSON_Delete(root);
  free(sizes);
  return rc;
}

/* ------------------------------------------------------------------- read */

typedef struct entry {
  char *name;
  char dtype[16];
  int ndim;
  int64_t shape[MAX_DIMS];
  uint64_t begin, end; /* relative to the data area */
} entry;

struct nd_safetensors {
  char *path;
  void *map;
  size_t map_len;
  const uint8_t *data; /* start of the data area */
  uint64_t data_len;
  int n;
  entry *e;                    /* in file order */
  float **f32;                 /* [n]: BF16 and F16 tensors converted on first read */
  struct nd_safetensors *next; /* the next shard of a sharded checkpoint */
};

/* Bytes per element, or 0 for a dtype we do not know (such a tensor is kept
 * so that the file opens, but its size is not checked against its shape). */
static unsigned dtype_size(const char *dt) {
  static const struct {
    const char *name;
    unsigned size;
  } table[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},  {"I32", 4},     {"I16", 2},    {"I8", 1},
               {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(dt, table[i].name) == 0) return table[i].size;
  return 0;
}

/* A non-negative integer that a double holds exactly; 0 on success. */
static int get_uint(const cJSON *x, uint64_t *v) {
  if (!cJSON_IsNumber(x)) return -1;
  double d = x->valuedouble;
  if (!(d >= 0) || d > MAX_EXACT || floor(d) != d) return -1;
  *v = (uint64_t)d;
  return 0;
}

/* The first control character of s, or 0: names and dtypes go into one-line messages. */
static unsigned control_char(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return (unsigned char)*s;
  return 0;
}

static int parse_entry(const char *path, const cJSON *item, entry *e, uint64_t data_len, nd_error *err) {
  const char *name = item->string;
  if (control_char(name))
    return nd__fail(err, ND_ECHECKPOINT, "%s: a tensor name holds the control character 0x%02x", path,
                    control_char(name));
  if (!cJSON_IsObject(item))
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s: header entry is not an object", path, name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
  const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
  if (!cJSON_IsString(dt) || strlen(dt->valuestring) >= sizeof e->dtype || control_char(dt->valuestring))
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s: missing or invalid dtype", path, name);
  strcpy(e->dtype, dt->valuestring);
  if (!cJSON_IsArray(shape))
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s: missing or invalid shape", path, name);
  int nd = cJSON_GetArraySize(shape);
  if (nd > MAX_DIMS)
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s: %d dimensions, at most %d supported", path, name, nd,
                    MAX_DIMS);
  e->ndim = nd;
  uint64_t numel = 1;
  int d = 0, overflow = 0;
  for (const cJSON *x = shape->child; x; x = x->next, d++) {
    uint64_t v;
    if (get_uint(x, &v))
      return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s: shape[%d] is not a non-negative integer", path, name, d);
    e->shape[d] = (int64_t)v;
    overflow |= __builtin_mul_overflow(numel, v, &numel);
  }
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || get_uint(offs->child, &e->begin) ||
      get_uint(offs->child->next, &e->end))
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s: data_offsets is not a pair of non-negative integers", path,
                    name);
  if (e->begin > e->end || e->end > data_len)
    return nd__fail(err, ND_ECHECKPOINT,
                    "%s: tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] out of range (data area is %" PRIu64
                    " bytes)",
                    path, name, e->begin, e->end, data_len);
  unsigned es = dtype_size(e->dtype);
  uint64_t want;
  if (es && (overflow || __builtin_mul_overflow(numel, (uint64_t)es, &want) || want != e->end - e->begin))
    return nd__fail(err, ND_ECHECKPOINT,
                    "%s: tensor %s: data_offsets span %" PRIu64 " bytes, but its shape and dtype %s need %s", path,
                    name, e->end - e->begin, e->dtype, overflow ? "more than 2^64" : "a different size");
  return 0;
}

static int cmp_begin(const void *a, const void *b) {
  const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

static int cmp_name(const void *a, const void *b) {
  return strcmp((*(const entry *const *)a)->name, (*(const entry *const *)b)->name);
}

/* Duplicate names and overlapping data, both found by sorting views. */
static int check_layout(const char *path, nd_safetensors *st, nd_error *err) {
  int rc = 0;
  if (st->n < 2) return 0;
  entry **v = malloc((size_t)st->n * sizeof *v);
  if (!v) return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  for (int i = 0; i < st->n; i++) v[i] = &st->e[i];
  qsort(v, (size_t)st->n, sizeof *v, cmp_name);
  for (int i = 1; i < st->n; i++)
    if (strcmp(v[i - 1]->name, v[i]->name) == 0) {
      rc = nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s appears twice in the header", path, v[i]->name);
      goto out;
    }
  qsort(v, (size_t)st->n, sizeof *v, cmp_begin);
  for (int i = 1; i < st->n; i++)
    if (v[i]->begin < v[i - 1]->end) {
      rc = nd__fail(err, ND_ECHECKPOINT, "%s: tensors %s and %s overlap in the data area", path, v[i - 1]->name,
                    v[i]->name);
      goto out;
    }
out:
  free(v);
  return rc;
}

static int parse_header(nd_safetensors *st, const char *hdr, size_t hlen, nd_error *err) {
  int rc = 0;
  const char *path = st->path;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, 0);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    if (at && at >= hdr && at <= hdr + hlen)
      return nd__fail(err, ND_ECHECKPOINT, "%s: header is not valid JSON (at header byte %td)", path, at - hdr);
    return nd__fail(err, ND_ECHECKPOINT, "%s: header is not valid JSON", path);
  }
  /* Padding is spaces; anything else after the JSON is a corrupt header. */
  for (const char *p = end; p < hdr + hlen; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      rc = nd__fail(err, ND_ECHECKPOINT, "%s: unexpected bytes after the header JSON (at header byte %td)", path,
                    p - hdr);
      goto out;
    }
  if (!cJSON_IsObject(root)) {
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: header is not a JSON object", path);
    goto out;
  }
  int n = 0;
  for (const cJSON *x = root->child; x; x = x->next) n += strcmp(x->string, METADATA_KEY) != 0;
  st->e = calloc(n ? (size_t)n : 1, sizeof *st->e);
  if (!st->e) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  for (const cJSON *x = root->child; x; x = x->next) {
    if (strcmp(x->string, METADATA_KEY) == 0) {
      /* Only checked for shape: a map of strings. */
      int bad = !cJSON_IsObject(x);
      for (const cJSON *m = bad ? NULL : x->child; m; m = m->next) bad |= !cJSON_IsString(m);
      if (bad) {
        rc = nd__fail(err, ND_ECHECKPOINT, "%s: __metadata__ is not a map of strings", path);
        goto out;
      }
      continue;
    }
    entry *e = &st->e[st->n];
    rc = parse_entry(path, x, e, st->data_len, err);
    if (rc) goto out;
    if (!(e->name = strdup(x->string))) {
      rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
      goto out;
    }
    st->n++;
  }
  rc = check_layout(path, st, err);
out:
  cJSON_Delete(root);
  return rc;
}

/* PATH.index.json's shards ("weight_map" values, in name order), opened and
 * chained: a Hugging Face checkpoint of model-0000N-of-0000M.safetensors. */
static int open_sharded(nd_safetensors **out, const char *path, nd_error *err) {
  char index[4096], shard[4096];
  snprintf(index, sizeof index, "%s.index.json", path);
  FILE *f = fopen(index, "rb");
  if (!f) return 1;
  char *text = NULL;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
  if (len >= 0 && len < MAX_HEADER && fseek(f, 0, SEEK_SET) == 0 && (text = calloc(1, (size_t)len + 1)) &&
      fread(text, 1, (size_t)len, f) != (size_t)len)
    free(text), text = NULL;
  fclose(f);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  int rc = 0;
  if (!cJSON_IsObject(map) || !map->child) {
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: no \"weight_map\" of tensor names to shard files", index);
    goto out;
  }
  const char *slash = strrchr(path, '/');
  int dir = slash ? (int)(slash - path + 1) : 0;
  nd_safetensors **tail = out;
  for (const cJSON *x = map->child; x; x = x->next) {
    if (!cJSON_IsString(x) || strchr(x->valuestring, '/')) {
      rc = nd__fail(err, ND_ECHECKPOINT, "%s: %s: expected a file name in the same directory", index, x->string);
      goto out;
    }
    int seen = 0;
    for (const cJSON *y = map->child; y != x; y = y->next) seen |= strcmp(y->valuestring, x->valuestring) == 0;
    if (seen) continue;
    snprintf(shard, sizeof shard, "%.*s%s", dir, path, x->valuestring);
    if ((rc = nd_safetensors_open(tail, shard, err))) goto out;
    tail = &(*tail)->next;
  }
out:
  cJSON_Delete(root);
  if (rc) nd_safetensors_close(*out), *out = NULL;
  return rc;
}

int nd_safetensors_open(nd_safetensors **out, const char *path, nd_error *err) {
  int rc = 0, fd = -1;
  *out = NULL;
  if (access(path, F_OK) != 0 && errno == ENOENT && (rc = open_sharded(out, path, err)) <= 0) return rc;
  rc = 0;
  struct stat sb;
  nd_safetensors *st = NULL;
  *out = NULL;
  st = calloc(1, sizeof *st);
  if (!st || !(st->path = strdup(path))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
    goto fail;
  }
  fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block */
  if (fd < 0) {
    rc = nd__fail(err, errno == ENOENT ? ND_ECHECKPOINT : ND_EIO, "%s: cannot open: %s", path, strerror(errno));
    goto fail;
  }
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: not a regular file", path);
    goto fail;
  }
  size_t size = (size_t)sb.st_size;
  if (size < 8) {
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: truncated: %zu bytes, too short for the 8-byte header length", path, size);
    goto fail;
  }
  void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) {
    rc = nd__fail(err, ND_EIO, "%s: cannot mmap: %s", path, strerror(errno));
    goto fail;
  }
  st->map = m;
  st->map_len = size;
  const uint8_t *p = m;
  uint64_t hlen = 0;
  for (int b = 0; b < 8; b++) hlen |= (uint64_t)p[b] << (8 * b);
  if (hlen == 0 || hlen > size - 8) {
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: header length %" PRIu64 " does not fit in the file (%zu bytes)", path, hlen,
                  size);
    goto fail;
  }
  if (hlen > MAX_HEADER) {
    rc = nd__fail(err, ND_ECHECKPOINT, "%s: header length %" PRIu64 " exceeds the %u MiB limit", path, hlen,
                  MAX_HEADER >> 20);
    goto fail;
  }
  st->data = p + 8 + hlen;
  st->data_len = size - 8 - hlen;
  rc = parse_header(st, (const char *)p + 8, (size_t)hlen, err);
  if (rc) goto fail;
  if (!(st->f32 = calloc(st->n ? (size_t)st->n : 1, sizeof *st->f32))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
    goto fail;
  }
  close(fd);
  *out = st;
  return 0;
fail:
  if (fd >= 0) close(fd);
  nd_safetensors_close(st);
  return rc;
}

void nd_safetensors_close(nd_safetensors *st) {
  if (!st) return;
  nd_safetensors_close(st->next);
  if (st->map) munmap(st->map, st->map_len);
  for (int i = 0; i < st->n; i++) free(st->e[i].name), free(st->f32 ? st->f32[i] : NULL);
  free(st->f32);
  free(st->e);
  free(st->path);
  free(st);
}

int nd_safetensors_count(const nd_safetensors *st) {
  int n = 0;
  for (; st; st = st->next) n += st->n;
  return n;
}

const char *nd_safetensors_name(const nd_safetensors *st, int i) {
  for (; st && i >= st->n; st = st->next) i -= st->n;
  return st && i >= 0 ? st->e[i].name : NULL;
}

static const entry *find_in(const nd_safetensors *st, const char *name) {
  size_t plen = strlen(PREFIX);
  for (int i = 0; i < st->n; i++) {
    const char *s = st->e[i].name;
    if (strcmp(s, name) == 0) return &st->e[i];
  }
  /* Hugging Face GPT2LMHeadModel stores the body under "transformer.". */
  for (int i = 0; i < st->n; i++) {
    const char *s = st->e[i].name;
    if (strncmp(s, PREFIX, plen) == 0 && strcmp(s + plen, name) == 0) return &st->e[i];
  }
  return NULL;
}

/* The shard holding name, and its entry there. */
static const entry *find(const nd_safetensors **st, const char *name) {
  for (const nd_safetensors *s = *st; s; s = s->next) {
    const entry *e = find_in(s, name);
    if (e) return *st = s, e;
  }
  return NULL;
}

/* A 16-bit float (bf16: the top half of an f32; f16: IEEE half) as f32. */
static float widen(uint16_t h, int bf16) {
  if (bf16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  int e = h >> 10 & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}

int nd_safetensors_get(const nd_safetensors *st, const char *name, const float **data, int64_t shape[4], int *ndim,
                       nd_error *err) {
  const nd_safetensors *top = st;
  const entry *e = find(&st, name);
  if (!e) return nd__fail(err, ND_ECHECKPOINT, "%s: no tensor %s", top->path, name);
  int half = strcmp(e->dtype, "BF16") == 0 || strcmp(e->dtype, "F16") == 0;
  if (strcmp(e->dtype, "F32") != 0 && !half)
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s has dtype %s, only F32, BF16 and F16 are supported", st->path,
                    e->name, e->dtype);
  if (half && e->ndim <= 4) {
    /* converted once, kept until close: callers read fp32 */
    int i = (int)(e - st->e);
    uint64_t n = (e->end - e->begin) / 2;
    if (!st->f32[i]) {
      float *f = malloc((n ? n : 1) * sizeof *f);
      if (!f) return nd__fail(err, ND_ENOMEM, "%s: out of memory", st->path);
      const uint8_t *p = st->data + e->begin;
      for (uint64_t k = 0; k < n; k++) f[k] = widen((uint16_t)(p[2 * k] | p[2 * k + 1] << 8), e->dtype[0] == 'B');
      st->f32[i] = f;
    }
    *data = st->f32[i];
    for (int d = 0; d < 4; d++) shape[d] = d < e->ndim ? e->shape[d] : 0;
    *ndim = e->ndim;
    return 0;
  }
  if (e->ndim > 4)
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s has %d dimensions, at most 4 supported", st->path, e->name,
                    e->ndim);
  const uint8_t *p = st->data + e->begin;
  /* Files whose header is not padded to a multiple of 4 cannot be read in place. */
  if ((uintptr_t)p % _Alignof(float) != 0)
    return nd__fail(err, ND_ECHECKPOINT, "%s: tensor %s is not 4-byte aligned in the file", st->path, e->name);
  *data = (const float *)(const void *)p;
  for (int d = 0; d < 4; d++) shape[d] = d < e->ndim ? e->shape[d] : 0;
  *ndim = e->ndim;
  return 0;
}
