/* The ndgraph subcommands, each given the arguments after its name. */
#ifndef ND_CLI_COMMANDS_H
#define ND_CLI_COMMANDS_H

#include "ndgraph/ndgraph.h"
#include "ndgraph/tokenizer.h"

int nd_cli_run(int argc, char **argv);
int nd_cli_plan(int argc, char **argv);
int nd_cli_eval(int argc, char **argv);
int nd_cli_kernel_check(int argc, char **argv);
int nd_cli_trace(int argc, char **argv);
int nd_cli_calibrate(int argc, char **argv);
int nd_cli_plot(int argc, char **argv);
int nd_cli_generate(int argc, char **argv);
int nd_cli_tokenize(int argc, char **argv);

/* How ids reach stdout: a tokenizer's text, printed as it settles (the
 * given tokenizer.json, else data.tokenizer's), a byte-level model's bytes
 * (vocabulary 256), else each id and a space (cli/text.c). */
typedef struct nd_cli_text {
  nd_tokenizer *tok;
  int bytes;
  uint32_t *ids; /* with a tokenizer: the ids of the text so far ... */
  size_t n, cap, shown; /* ... and the bytes of it printed */
} nd_cli_text;
int nd_cli_text_open(nd_cli_text *t, const nd_config *cfg, const char *tokenizer, nd_error *err);
void nd_cli_text_close(nd_cli_text *t);
/* The ids of a prompt: its bytes for a model without a tokenizer, else the
 * end-of-text id (as documents start in training) and the text's ids;
 * *ids malloc'd. */
int nd_cli_text_prompt(nd_cli_text *t, const char *text, int **ids, int *n, nd_error *err);
void nd_cli_text_put(nd_cli_text *t, const int *ids, int n);
/* The rest of the text and a newline; the next put starts a new text. */
void nd_cli_text_end(nd_cli_text *t);
/* Generates from prompt with base's settings, printing each new token as it
 * comes through out; opens *gen on first use. */
int nd_cli_sample(nd_trainer *tr, nd_generator **gen, const int *prompt, int n_prompt, const nd_generate_opts *base,
                  nd_cli_text *out, nd_generate_result *res, nd_error *err);

/* The launcher's grace after SIGTERM (cli/grace.c): seconds before it kills
 * the processes, the setting that changes it and the launcher's name;
 * setting NULL outside a launcher. */
typedef struct nd_cli_grace {
  double seconds;
  const char *setting, *launcher;
} nd_cli_grace;
nd_cli_grace nd_cli_stop_grace(void);
/* One line at the start of a run: the grace, and what a checkpoint of
 * need_bytes has to fit in it. */
void nd_cli_grace_note(nd_cli_grace g, double need_bytes);
/* One warning, the first time a checkpoint took longer than the grace:
 * what to set, and to what. */
void nd_cli_grace_check(nd_cli_grace g, long long step, double took_s);

/* Exit statuses (cli/exit.c holds the table from error codes). The input a
 * command reads to know what to do, its configuration or the trace it
 * summarizes, is bad input whatever the reason it cannot be read. */
#define ND_EXIT_FAILURE   1
#define ND_EXIT_BAD_INPUT 2
/* The exit status for a library return code (0 for 0). */
int nd_cli_status(int rc);
/* Prints "ndgraph: MESSAGE" (err's, or the code's) on stderr; returns nd_cli_status(rc). */
int nd_cli_fail(int rc, const nd_error *err);

/* Options a command takes besides CONFIG and --set: names, and where their values go. */
/* What an option takes: nothing (a flag), a value, or a value that may be
 * empty ("" turns off a file the configuration names: --trace "", --metrics ""). */
enum nd_cli_takes { ND_CLI_FLAG, ND_CLI_VALUE, ND_CLI_VALUE_OR_EMPTY };

typedef struct nd_cli_option {
  const char *name;        /* "--metrics" */
  enum nd_cli_takes takes; /* a flag, or a value */
  const char *value;       /* filled in (a flag: "1") */
} nd_cli_option;

/* Loads CONFIG (or the embedded default), applies every --set in order,
 * validates, and fills opts. Prints the one-line error itself; returns the
 * exit status to use on failure (2), or 0. */
int nd_cli_parse(int argc, char **argv, nd_cli_option *opts, int n_opts, nd_config **cfg);
/* An option's value as a whole number from 1 to max, in *out; else prints
 * the one-line error and returns the exit status to use (2). */
int nd_cli_count(const char *option, const char *text, long long max, long long *out);
/* The same from 0: a process's number. */
int nd_cli_index(const char *option, const char *text, long long max, long long *out);

/* Signals during `ndgraph run` (cli/signals.c). signals_hold, first in
 * main(): notes the signals inherited as ignored (nohup) and blocks the
 * others in every thread to come (the workers inherit the mask) and across
 * the re-execution for OpenBLAS (a blocked signal stays blocked and pending
 * through execve), so that one sent while the program starts waits for the
 * handler instead of killing it or being lost.
 * signals_catch, after it started (it installs handlers of its own): our
 * handlers, unblocked in the calling thread only, so the workers never see a
 * signal. signal_take returns the signal to act on (0: none). */
void nd_cli_signals_hold(void);
void nd_cli_signals_catch(void);
int nd_cli_signal_take(void);
/* the newest complete checkpoint (step 0: none), for the line a second SIGINT
 * prints on stderr as it stops at once; called by the process that speaks */
void nd_cli_signals_saved(const char *save_dir, long long step);

#endif
