#!/usr/bin/env bash
# One exit status per kind of error, whatever the command (cli/exit.c): the
# same bad plugin is bad input (2) under run, plan, eval and kernel-check; a
# missing data file is a failure while running (1) under run and eval.
. "${ND_SRCDIR:-.}/tests/tap.sh"

bad="${ND_BUILDDIR:-.}/tests/plugins/.libs"
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.steps=1 --set train.eval_every=0 --set train.save_dir= --set runtime.workers=1)

# status COMMAND...: the exit status, stdout and stderr dropped
status() { "$@" >/dev/null 2>&1; echo $?; }

for plugin in "$tmp/missing.so" "$bad/libno_entry.so" "$bad/libbad_abi.so"; do
  name=${plugin##*/}
  set_plugin=(--set "kernels.plugins=[$plugin]")
  run=$(status "$ndgraph" run "${tiny[@]}" "${set_plugin[@]}")
  plan=$(status "$ndgraph" plan "${tiny[@]}" "${set_plugin[@]}")
  eval=$(status "$ndgraph" eval "${tiny[@]}" "${set_plugin[@]}" --checkpoint "$tmp")
  check=$(status "$ndgraph" kernel-check "$plugin" silu)
  [ "$run" -eq 2 ] && [ "$plan" -eq 2 ] && [ "$eval" -eq 2 ] && [ "$check" -eq 2 ]
  ok $? "$name: exit 2 under run ($run), plan ($plan), eval ($eval), kernel-check ($check)"
done

run=$(status "$ndgraph" run "${tiny[@]}" --set data.train="$tmp/missing.bin")
eval=$(status "$ndgraph" eval "${tiny[@]}" --set data.val="$tmp/missing.bin" --checkpoint "$tmp")
[ "$run" -eq 1 ] && [ "$eval" -eq 1 ]
ok $? "a missing data file: exit 1 under run ($run) and eval ($eval)"

for cmd in run plan eval; do
  st=$(status "$ndgraph" $cmd --no-such-option)
  [ "$st" -eq 2 ]; ok $? "$cmd: an unknown option is exit 2 ($st)"
done

for cmd in run plan eval calibrate "trace summarize"; do
  out=$($ndgraph $cmd --help 2>/dev/null); st=$?
  [ "$st" -eq 0 ] && [[ "$out" == usage:* ]]; ok $? "$cmd --help: the usage on stdout, exit 0 ($st)"
done

done_testing
