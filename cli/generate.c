/* `ndgraph generate`: text from a checkpoint, printed as it comes, then the
 * prompt's and the new tokens' speeds; and the short sample `run` prints
 * every train.sample_every steps, through the same code. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"

static void put_token(void *user, int id) { nd_cli_text_put(user, &id, 1); }

int nd_cli_sample(nd_trainer *tr, nd_generator **gen, const int *prompt, int n_prompt, const nd_generate_opts *base,
                  nd_cli_text *out, nd_generate_result *res, nd_error *err) {
  int rc = *gen ? 0 : nd_generator_open(gen, tr, err);
  if (rc) return rc;
  nd_generate_opts o = *base;
  o.prompt = prompt;
  o.n_prompt = n_prompt;
  o.on_token = put_token;
  o.user = out;
  rc = nd_generate(*gen, tr, &o, res, err);
  nd_cli_text_end(out);
  return rc;
}

/* "1,2,3" into ids (at most max); the vocabulary is the library's to check. */
static int parse_ids(const char *text, int *ids, int max, int *n) {
  const char *p = text;
  *n = 0;
  for (;;) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno || end == p || v < 0 || v > INT_MAX || *n == max || (*end && *end != ',')) {
      fprintf(stderr, "ndgraph: --prompt-ids '%s': expected ids from 0, separated by commas (at most %d)\n", text, max);
      return ND_EXIT_BAD_INPUT;
    }
    ids[(*n)++] = (int)v;
    if (!*end) return 0;
    p = end + 1;
  }
}

static int parse_number(const char *option, const char *text, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v >= lo && v <= hi)) {
    fprintf(stderr, "ndgraph: %s '%s': expected a number from %g to %g\n", option, text, lo, hi);
    return ND_EXIT_BAD_INPUT;
  }
  *out = v;
  return 0;
}

static int options(nd_cli_option *opts, const nd_config *cfg, nd_cli_text *out, nd_generate_opts *o, int **ids, int *n) {
  char buf[32];
  long long S = nd_config_get(cfg, "model.seq_len", buf, sizeof buf) == 0 ? atoll(buf) : 1, v;
  double x;
  int st;
  if (!opts[0].value) {
    fprintf(stderr, "ndgraph: generate needs --checkpoint DIR\n");
    return ND_EXIT_BAD_INPUT;
  }
  struct stat sb;
  if (stat(opts[0].value, &sb) != 0) {
    fprintf(stderr, "ndgraph: %s: cannot open the checkpoint (%s)\n", opts[0].value, strerror(errno));
    return ND_EXIT_BAD_INPUT;
  }
  if (!opts[1].value == !opts[2].value) {
    fprintf(stderr, "ndgraph: generate needs one of --prompt TEXT and --prompt-ids LIST\n");
    return ND_EXIT_BAD_INPUT;
  }
  if (opts[1].value) { /* its bytes for a byte-level model, else through the tokenizer */
    nd_error err = {0};
    if (!out->tok && !out->bytes) {
      fprintf(stderr, "ndgraph: --prompt TEXT: model.vocab_size is not 256 and there is no tokenizer (--tokenizer or "
                      "data.tokenizer); --prompt-ids gives ids\n");
      return ND_EXIT_BAD_INPUT;
    }
    if (nd_cli_text_prompt(out, opts[1].value, ids, n, &err)) return nd_cli_fail(err.code, &err);
    if (*n > S) {
      fprintf(stderr, "ndgraph: --prompt: %d tokens exceed the %lld positions of model.seq_len\n", *n, S);
      return ND_EXIT_BAD_INPUT;
    }
  } else {
    if (!(*ids = malloc((size_t)S * sizeof **ids))) return ND_EXIT_FAILURE;
    if ((st = parse_ids(opts[2].value, *ids, (int)S, n))) return st;
  }
  if (opts[3].value && (st = nd_cli_count("--tokens", opts[3].value, INT_MAX, &v))) return st;
  o->tokens = opts[3].value ? (int)v : 64;
  if (opts[4].value && (st = parse_number("--temperature", opts[4].value, 0.0, 1e6, &x))) return st;
  o->temperature = opts[4].value ? x : 1.0;
  /* 0 turns the cut off */
  if (opts[5].value && strcmp(opts[5].value, "0") != 0 && (st = nd_cli_count("--top-k", opts[5].value, INT_MAX, &v)))
    return st;
  o->top_k = opts[5].value && strcmp(opts[5].value, "0") != 0 ? (int)v : 0;
  if (opts[6].value && (st = parse_number("--seed", opts[6].value, 0.0, 1.8e19, &x))) return st;
  o->seed = opts[6].value ? strtoull(opts[6].value, NULL, 10) : 1337;
  return 0;
}

int nd_cli_generate(int argc, char **argv) {
  nd_cli_option opts[] = {{"--checkpoint", ND_CLI_VALUE, NULL}, {"--prompt", ND_CLI_VALUE, NULL},
                          {"--prompt-ids", ND_CLI_VALUE, NULL}, {"--tokens", ND_CLI_VALUE, NULL},
                          {"--temperature", ND_CLI_VALUE, NULL}, {"--top-k", ND_CLI_VALUE, NULL},
                          {"--seed", ND_CLI_VALUE, NULL},       {"--tokenizer", ND_CLI_VALUE, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 8, &cfg);
  if (status) return status;
  nd_generate_opts o = {0};
  nd_cli_text out;
  nd_error err = {0};
  int *ids = NULL, n = 0, rc;
  if ((rc = nd_cli_text_open(&out, cfg, opts[7].value, &err))) {
    nd_config_free(cfg);
    nd_cli_fail(rc, &err);
    return ND_EXIT_BAD_INPUT; /* the tokenizer is this command's input */
  }
  if ((status = options(opts, cfg, &out, &o, &ids, &n))) {
    free(ids);
    nd_cli_text_close(&out);
    nd_config_free(cfg);
    return status;
  }
  nd_trainer *tr = NULL;
  nd_generator *gen = NULL;
  nd_generate_result res;
  if (!(rc = nd_trainer_open(&tr, cfg, &err)) && !(rc = nd_trainer_load(tr, opts[0].value, 0, &err)))
    rc = nd_cli_sample(tr, &gen, ids, n, &o, &out, &res, &err);
  if (!rc) {
    int steps = res.generated - 1; /* the first new id comes from the prompt's forward */
    fprintf(stderr,
            "ndgraph: prompt %d tokens in %.1f ms (%.0f tokens/s) | %d new tokens in %.1f ms (%.0f tokens/s, %.3f ms "
            "a decoding step)\n",
            n, res.prefill_ms, n / (res.prefill_ms / 1e3), res.generated, res.decode_ms,
            res.generated / (res.decode_ms / 1e3), steps ? res.decode_ms / steps : 0.0);
  }
  nd_generator_close(gen);
  nd_trainer_close(tr);
  nd_cli_text_close(&out);
  nd_config_free(cfg);
  free(ids);
  return rc ? nd_cli_fail(rc, &err) : 0;
}
