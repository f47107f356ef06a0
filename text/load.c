/* Reading a Hugging Face tokenizer.json: the BPE model, the added tokens,
 * the normalizers, pre-tokenizers and decoders these families use. What is
 * not supported is refused by name, never approximated. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

#define ND_TOKENIZER_MAX_IDS (1 << 24)

/* GPT-2's pre-tokenizer regex, which ByteLevel with use_regex applies. */
#define GPT2_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

typedef struct loader {
  nd_tokenizer *tok;
  nd_error *err;
} loader;

static int unsupported(loader *l, const char *what, const char *name) {
  return nd__fail(l->err, ND_ENOTIMPL, "%s: %s %s is not supported", l->tok->path, what, name);
}
static int malformed(loader *l, const char *what) {
  return nd__fail(l->err, ND_EINVAL, "%s: %s is malformed", l->tok->path, what);
}
static int no_memory(loader *l) { return nd__fail(l->err, ND_ENOMEM, "%s: out of memory", l->tok->path); }

/* A boolean member, def when absent or null. */
static int flag(const cJSON *o, const char *name, int def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}
static const char *str(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}
static const char *type_of(const cJSON *o) {
  const char *t = str(o, "type");
  return t ? t : "(without a type)";
}

/* `tokenizers`' regexes are Oniguruma's, whose \s is Unicode's White_Space;
 * PCRE2's (10.42, with UCP) also matches U+180E, which Unicode took out of
 * White_Space in 6.3, and GPT-2's \s+(?!\S) then cuts "  \u180e" elsewhere.
 * So \s and \S are spelled out as White_Space before PCRE2 sees them. NULL
 * when out of memory or for \S inside a class, which has no spelling. */
#define WHITE_SPACE "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static char *white_space(const char *re) {
  size_t n = strlen(re), k = 0;
  char *out = malloc(n * sizeof "[^" WHITE_SPACE "]" + 1);
  int in_class = 0;
  for (size_t i = 0; out && i < n; i++) {
    const char *put = NULL;
    if (re[i] == '\\' && (re[i + 1] == 's' || re[i + 1] == 'S')) {
      if (re[i + 1] == 'S' && in_class) {
        free(out);
        return NULL;
      }
      put = re[i + 1] == 'S' ? "[^" WHITE_SPACE "]" : in_class ? WHITE_SPACE : "[" WHITE_SPACE "]";
      i++;
    } else if (re[i] == '\\' && re[i + 1]) {
      out[k++] = re[i++];
    } else if (re[i] == '[' && !in_class) {
      in_class = 1;
      out[k++] = re[i];
      if (re[i + 1] == '^') out[k++] = re[++i];
      if (re[i + 1] == ']') out[k++] = re[++i]; /* a ']' first is a member */
      continue;
    } else if (re[i] == ']' && in_class)
      in_class = 0;
    if (put) k += (size_t)sprintf(out + k, "%s", put);
    else out[k++] = re[i];
  }
  if (out) out[k] = 0;
  return out;
}

static int compile(loader *l, nd__pattern *p, const char *regex) {
  int code;
  PCRE2_SIZE at;
  char *ws = white_space(regex);
  if (!ws) return nd__fail(l->err, ND_ENOTIMPL, "%s: regex /%s/: \\S inside a character class is not supported", l->tok->path, regex);
  p->re = pcre2_compile((PCRE2_SPTR)ws, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
  free(ws);
  if (!p->re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    return nd__fail(l->err, ND_ENOTIMPL, "%s: regex /%s/ at offset %zu: %s", l->tok->path, regex, (size_t)at,
                    (char *)msg);
  }
  pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* without the JIT (not built for this CPU) PCRE2 interprets */
  p->literal_len = strlen(regex);
  return (p->literal = strdup(regex)) ? 0 : no_memory(l);
}

/* {"String": s} or {"Regex": r}. */
static int pattern(loader *l, nd__pattern *p, const cJSON *o, const char *what) {
  const cJSON *pat = cJSON_GetObjectItemCaseSensitive(o, "pattern");
  const char *s = str(pat, "String"), *r = str(pat, "Regex");
  if (r) return compile(l, p, r);
  if (!s || !*s) return malformed(l, what);
  if (!(p->literal = strdup(s))) return no_memory(l);
  p->literal_len = strlen(s);
  return 0;
}

/* One character, as Metaspace's replacement and Strip's content are. */
static int one_char(loader *l, char out[8], const char *s, const char *what) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 4 || nd__utf8_valid_len((const unsigned char *)s, n) != n) return malformed(l, what);
  memcpy(out, s, n + 1);
  return 0;
}

/* Metaspace's prepend_scheme, or the older add_prefix_space. */
static int prepend_scheme(loader *l, const cJSON *o, enum nd__prepend *out) {
  const char *s = str(o, "prepend_scheme");
  if (!s) *out = flag(o, "add_prefix_space", 1) ? ND_PREPEND_ALWAYS : ND_PREPEND_NEVER;
  else if (!strcmp(s, "always")) *out = ND_PREPEND_ALWAYS;
  else if (!strcmp(s, "first")) *out = ND_PREPEND_FIRST;
  else if (!strcmp(s, "never")) *out = ND_PREPEND_NEVER;
  else return unsupported(l, "Metaspace prepend_scheme", s);
  return 0;
}

/* Appends one element to a growing array of structs. */
#define PUSH(l, arr, n, elem)                                           \
  do {                                                                  \
    void *p_ = realloc((arr), ((size_t)(n) + 1) * sizeof *(arr));       \
    if (!p_) return no_memory(l);                                       \
    (arr) = p_;                                                         \
    (arr)[(n)++] = (elem);                                              \
  } while (0)

static int normalizer(loader *l, const cJSON *o) {
  nd_tokenizer *tok = l->tok;
  if (cJSON_IsNull(o) || !o) return 0;
  const char *t = type_of(o);
  if (!strcmp(t, "Sequence")) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "normalizers")) {
      int rc = normalizer(l, e);
      if (rc) return rc;
    }
    return 0;
  }
  nd__norm n = {0};
  if (!strcmp(t, "Prepend")) {
    n.kind = ND_NORM_PREPEND;
    if (!str(o, "prepend")) return malformed(l, "normalizer Prepend");
    n.content = strdup(str(o, "prepend"));
  } else if (!strcmp(t, "Replace")) {
    n.kind = ND_NORM_REPLACE;
    int rc = pattern(l, &n.pattern, o, "normalizer Replace");
    if (rc) return rc;
    if (!str(o, "content")) return malformed(l, "normalizer Replace");
    n.content = strdup(str(o, "content"));
  } else
    /* NFC, NFKC, Lowercase, Strip... change the text in ways we do not copy */
    return unsupported(l, "normalizer", t);
  if (!n.content) return no_memory(l);
  PUSH(l, tok->norms, tok->n_norms, n);
  return 0;
}

static int split_behavior(loader *l, const char *s, enum nd__split *out) {
  static const struct {
    const char *name;
    enum nd__split b;
  } names[] = {{"Removed", ND_SPLIT_REMOVED},
               {"Isolated", ND_SPLIT_ISOLATED},
               {"MergedWithPrevious", ND_SPLIT_PREVIOUS},
               {"MergedWithNext", ND_SPLIT_NEXT},
               {"Contiguous", ND_SPLIT_CONTIGUOUS}};
  for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(s, names[i].name)) return *out = names[i].b, 0;
  return unsupported(l, "Split behavior", s ? s : "(none)");
}

static int pre_tokenizer(loader *l, const cJSON *o) {
  nd_tokenizer *tok = l->tok;
  if (cJSON_IsNull(o) || !o) return 0;
  const char *t = type_of(o);
  int rc = 0;
  if (!strcmp(t, "Sequence")) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "pretokenizers")) {
      if ((rc = pre_tokenizer(l, e))) return rc;
    }
    return 0;
  }
  nd__pretok p = {0};
  if (!strcmp(t, "Split")) {
    p.kind = ND_PRE_SPLIT;
    p.invert = flag(o, "invert", 0);
    if ((rc = pattern(l, &p.pattern, o, "pre_tokenizer Split")) || (rc = split_behavior(l, str(o, "behavior"), &p.behavior)))
      return rc;
  } else if (!strcmp(t, "ByteLevel")) {
    p.kind = ND_PRE_BYTELEVEL;
    p.add_prefix_space = flag(o, "add_prefix_space", 1);
    p.use_regex = flag(o, "use_regex", 1);
    p.behavior = ND_SPLIT_ISOLATED;
    if (p.use_regex && (rc = compile(l, &p.pattern, GPT2_REGEX))) return rc;
  } else if (!strcmp(t, "Metaspace")) {
    p.kind = ND_PRE_METASPACE;
    p.split = flag(o, "split", 1);
    if ((rc = one_char(l, p.replacement, str(o, "replacement"), "pre_tokenizer Metaspace")) ||
        (rc = prepend_scheme(l, o, &p.prepend)))
      return rc;
  } else
    return unsupported(l, "pre_tokenizer", t);
  PUSH(l, tok->pretoks, tok->n_pretoks, p);
  return 0;
}

static int decoder(loader *l, const cJSON *o) {
  nd_tokenizer *tok = l->tok;
  if (cJSON_IsNull(o) || !o) return 0;
  const char *t = type_of(o);
  int rc;
  if (!strcmp(t, "Sequence")) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "decoders")) {
      if ((rc = decoder(l, e))) return rc;
    }
    return 0;
  }
  nd__dec d = {0};
  if (!strcmp(t, "ByteLevel")) d.kind = ND_DEC_BYTELEVEL;
  else if (!strcmp(t, "ByteFallback")) d.kind = ND_DEC_BYTEFALLBACK;
  else if (!strcmp(t, "Fuse")) d.kind = ND_DEC_FUSE;
  else if (!strcmp(t, "Replace")) {
    const char *from = str(cJSON_GetObjectItemCaseSensitive(o, "pattern"), "String"), *to = str(o, "content");
    if (!from) return unsupported(l, "decoder", "Replace with a regex");
    if (!*from || !to) return malformed(l, "decoder Replace");
    d.kind = ND_DEC_REPLACE, d.from = strdup(from), d.to = strdup(to);
    if (!d.from || !d.to) return no_memory(l);
  } else if (!strcmp(t, "Strip")) {
    d.kind = ND_DEC_STRIP;
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(o, "start"), *stop = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if ((rc = one_char(l, d.content, str(o, "content"), "decoder Strip"))) return rc;
    if (!cJSON_IsNumber(start) || !cJSON_IsNumber(stop) || start->valueint < 0 || stop->valueint < 0)
      return malformed(l, "decoder Strip");
    d.start = start->valueint, d.stop = stop->valueint;
  } else if (!strcmp(t, "Metaspace")) {
    d.kind = ND_DEC_METASPACE;
    char r[8];
    if ((rc = one_char(l, r, str(o, "replacement"), "decoder Metaspace")) || (rc = prepend_scheme(l, o, &d.prepend)))
      return rc;
    d.from = strdup(r), d.to = strdup(" ");
    if (!d.from || !d.to) return no_memory(l);
  } else
    return unsupported(l, "decoder", t);
  PUSH(l, tok->decs, tok->n_decs, d);
  return 0;
}

/* Gives id its string (the vocabulary's, or an added token's). */
static int name_id(loader *l, int64_t id, const char *s) {
  nd_tokenizer *tok = l->tok;
  if (id < 0 || id >= tok->vocab_size) return malformed(l, "an id");
  if (tok->token[id]) return 0; /* an added token that the vocabulary has: its string is a key of vocab */
  tok->token_len[id] = strlen(s);
  return (tok->token[id] = strdup(s)) ? 0 : no_memory(l);
}

static int merges(loader *l, const cJSON *list) {
  nd_tokenizer *tok = l->tok;
  uint32_t rank = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, list) {
    const char *a, *b;
    size_t la, lb;
    if (cJSON_IsString(m)) { /* "a b" */
      const char *sp = strchr(m->valuestring, ' ');
      if (!sp) return malformed(l, "model.merges");
      a = m->valuestring, la = (size_t)(sp - a), b = sp + 1, lb = strlen(b);
    } else if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(m, 1))) { /* ["a", "b"] */
      a = cJSON_GetArrayItem(m, 0)->valuestring, la = strlen(a);
      b = cJSON_GetArrayItem(m, 1)->valuestring, lb = strlen(b);
    } else
      return malformed(l, "model.merges");
    int64_t ia = nd__strmap_get(&tok->vocab, a, la), ib = nd__strmap_get(&tok->vocab, b, lb);
    char *ab = malloc(la + lb);
    if (!ab) return no_memory(l);
    memcpy(ab, a, la), memcpy(ab + la, b, lb);
    int64_t iab = nd__strmap_get(&tok->vocab, ab, la + lb);
    free(ab);
    if (ia < 0 || ib < 0 || iab < 0)
      return nd__fail(l->err, ND_EINVAL, "%s: merge %u (%.*s %.*s) names a token not in the vocabulary", tok->path,
                      rank, (int)la, a, (int)lb, b);
    /* a pair listed twice takes its last rank, as in `tokenizers` (a map collected in order) */
    if (nd__pairmap_put(&tok->merges, (uint32_t)ia, (uint32_t)ib, (uint64_t)rank << 32 | (uint64_t)iab))
      return no_memory(l);
    rank++;
  }
  return 0;
}

static int model(loader *l, const cJSON *root) {
  nd_tokenizer *tok = l->tok;
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
  const char *t = str(m, "type");
  if (!cJSON_IsObject(m)) return malformed(l, "model");
  if (t && strcmp(t, "BPE")) return unsupported(l, "model", t);
  const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(m, "dropout");
  if (cJSON_IsNumber(dropout) && dropout->valuedouble != 0) return unsupported(l, "model option", "dropout");
  const char *prefix = str(m, "continuing_subword_prefix"), *suffix = str(m, "end_of_word_suffix");
  if ((prefix && *prefix) || (suffix && *suffix))
    return unsupported(l, "model option", prefix && *prefix ? "continuing_subword_prefix" : "end_of_word_suffix");
  tok->byte_fallback = flag(m, "byte_fallback", 0);
  tok->fuse_unk = flag(m, "fuse_unk", 0);
  tok->ignore_merges = flag(m, "ignore_merges", 0);

  /* the ids: the vocabulary's and the added tokens' */
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(m, "vocab"), *e;
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (!cJSON_IsObject(vocab)) return malformed(l, "model.vocab");
  int64_t top = -1;
  cJSON_ArrayForEach(e, vocab) {
    if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= 1u << 31) return malformed(l, "model.vocab");
    top = e->valueint > top ? e->valueint : top;
  }
  cJSON_ArrayForEach(e, added) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
    if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= 1u << 31 || !str(e, "content"))
      return malformed(l, "added_tokens");
    top = id->valueint > top ? id->valueint : top;
  }
  if (top < 0) return malformed(l, "model.vocab (empty)");
  /* tables by id: a hostile id must not ask for gigabytes (the largest vocabularies have some 256k) */
  if (top >= ND_TOKENIZER_MAX_IDS)
    return nd__fail(l->err, ND_ENOTIMPL, "%s: id %lld: more than %d ids are not supported", tok->path, (long long)top,
                    ND_TOKENIZER_MAX_IDS);
  tok->vocab_size = top + 1;
  tok->token = calloc((size_t)tok->vocab_size, sizeof *tok->token);
  tok->token_len = calloc((size_t)tok->vocab_size, sizeof *tok->token_len);
  tok->special = calloc((size_t)tok->vocab_size, 1);
  if (!tok->token || !tok->token_len || !tok->special) return no_memory(l);
  int rc;
  cJSON_ArrayForEach(e, vocab) {
    if ((rc = name_id(l, e->valueint, e->string))) return rc;
    if (nd__strmap_put(&tok->vocab, tok->token[e->valueint], tok->token_len[e->valueint], (uint32_t)e->valueint))
      return no_memory(l);
  }
  const char *unk = str(m, "unk_token");
  tok->unk = unk ? nd__strmap_get(&tok->vocab, unk, strlen(unk)) : -1;
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    tok->byte_id[b] = nd__strmap_get(&tok->vocab, name, 6);
  }
  return merges(l, cJSON_GetObjectItemCaseSensitive(m, "merges"));
}

static int added_tokens(loader *l, const cJSON *root) {
  nd_tokenizer *tok = l->tok;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "added_tokens")) {
    const char *content = str(e, "content");
    if (!*content) return malformed(l, "added_tokens (an empty token)");
    if (flag(e, "single_word", 0) || flag(e, "lstrip", 0) || flag(e, "rstrip", 0))
      return unsupported(l, "added token option (single_word, lstrip, rstrip) of", content);
    nd__added a = {.content = strdup(content),
                   .len = strlen(content),
                   .id = (uint32_t)cJSON_GetObjectItemCaseSensitive(e, "id")->valueint,
                   .special = flag(e, "special", 0)};
    a.normalized = flag(e, "normalized", !a.special);
    if (!a.content) return no_memory(l);
    PUSH(l, tok->added, tok->n_added, a);
    int rc = name_id(l, a.id, content);
    if (rc) return rc;
    tok->special[a.id] = (uint8_t)a.special;
    tok->added_first[(unsigned char)content[0]] = 1;
  }
  /* the end-of-text token, by the names these families give it */
  static const char *const eot_names[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};
  tok->eot = -1;
  for (size_t k = 0; k < sizeof eot_names / sizeof eot_names[0] && tok->eot < 0; k++)
    for (int i = 0; i < tok->n_added; i++)
      if (tok->added[i].special && !strcmp(tok->added[i].content, eot_names[k])) {
        tok->eot = tok->added[i].id;
        break;
      }
  return 0;
}

/* Options that would change the ids of `tokenizers`' encode. */
static int refused_options(loader *l, const cJSON *root) {
  static const char *const keys[] = {"truncation", "padding"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
    if (v && !cJSON_IsNull(v)) return unsupported(l, "option", keys[i]);
  }
  return 0;
}

/* The whole file, NUL-terminated. */
static int slurp(const char *path, char **out, nd_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return nd__fail(err, ND_EINVAL, "%s: cannot open: %s", path, strerror(errno));
  char *buf = NULL;
  size_t len = 0, cap = 0, got;
  int rc = 0;
  do {
    if (nd__grow(&buf, len, 1 << 16, &cap)) {
      rc = nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
      goto done;
    }
    got = fread(buf + len, 1, cap - len - 1, f);
    len += got;
  } while (got > 0);
  if (ferror(f)) rc = nd__fail(err, ND_EINVAL, "%s: cannot read: %s", path, strerror(errno));
  else buf[len] = 0;
done:
  fclose(f);
  if (rc) free(buf);
  else *out = buf;
  return rc;
}

int nd_tokenizer_load(const char *path, nd_tokenizer **out, nd_error *err) {
  *out = NULL;
  char *text = NULL;
  cJSON *root = NULL;
  nd_tokenizer *tok = calloc(1, sizeof *tok);
  if (!tok || !(tok->path = strdup(path))) {
    free(tok);
    return nd__fail(err, ND_ENOMEM, "%s: out of memory", path);
  }
  loader l = {tok, err};
  int rc = slurp(path, &text, err);
  if (rc) goto done;
  root = cJSON_Parse(text);
  if (!cJSON_IsObject(root)) {
    rc = nd__fail(err, ND_EINVAL, "%s: not a JSON object (a tokenizer.json is)", path);
    goto done;
  }
  if ((rc = refused_options(&l, root)) || (rc = model(&l, root)) || (rc = added_tokens(&l, root)) ||
      (rc = normalizer(&l, cJSON_GetObjectItemCaseSensitive(root, "normalizer"))) ||
      (rc = pre_tokenizer(&l, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"))) ||
      (rc = decoder(&l, cJSON_GetObjectItemCaseSensitive(root, "decoder"))))
    goto done;
  if (!(tok->match = pcre2_match_data_create(8, NULL))) {
    rc = no_memory(&l);
    goto done;
  }
  tok->cut_at_spaces = nd__cut_at_spaces(tok);
  *out = tok;
done:
  cJSON_Delete(root);
  free(text);
  if (rc) nd_tokenizer_free(tok);
  return rc;
}

static void pattern_free(nd__pattern *p) {
  pcre2_code_free(p->re);
  free(p->literal);
}

void nd_tokenizer_free(nd_tokenizer *tok) {
  if (!tok) return;
  for (int64_t i = 0; tok->token && i < tok->vocab_size; i++) free(tok->token[i]);
  free(tok->token), free(tok->token_len), free(tok->special);
  nd__strmap_free(&tok->vocab);
  nd__pairmap_free(&tok->merges);
  for (int i = 0; i < tok->n_added; i++) free(tok->added[i].content);
  for (int i = 0; i < tok->n_norms; i++) pattern_free(&tok->norms[i].pattern), free(tok->norms[i].content);
  for (int i = 0; i < tok->n_pretoks; i++) pattern_free(&tok->pretoks[i].pattern);
  for (int i = 0; i < tok->n_decs; i++) free(tok->decs[i].from), free(tok->decs[i].to);
  free(tok->added), free(tok->norms), free(tok->pretoks), free(tok->decs);
  pcre2_match_data_free(tok->match);
  nd__bpe_free(tok);
  for (int i = 0; i < 3; i++) nd__pieces_free(&tok->scratch[i]);
  free(tok->clean), free(tok->spans), free(tok->norm[0]), free(tok->norm[1]);
  free(tok->path);
  free(tok);
}

int64_t nd_tokenizer_vocab_size(const nd_tokenizer *tok) { return tok->vocab_size; }
int64_t nd_tokenizer_eot(const nd_tokenizer *tok) { return tok->eot; }
