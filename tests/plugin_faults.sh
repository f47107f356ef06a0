#!/bin/bash
# Plugins that take their process down (tests/plugins/fault.c): a crash, an
# abort, a hang or an exit in a constructor, in the init or in a kernel, at
# the start-up probe (run, plan), in kernel-check or later in the run, ends
# ndgraph with one line naming the plugin and the kernel, never silently,
# never with a pass, never a hang. A cost model's impossible FLOPs are refused.
. "${ND_SRCDIR:-.}/tests/tap.sh"
F="${ND_BUILDDIR:-.}/tests/plugins/.libs"
TINY="--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set model.vocab_size=256 --set runtime.workers=1 --set train.eval_every=0 --set train.save_dir="
RES="--set kernels.override.residual_fwd=fault"
K="kernel 'fault' for residual_fwd"
ulimit -c 0 # the plugins' deliberate crashes leave no core files
# The sanitizers would report the plugins' deliberate faults themselves
# (which is theirs to do): here the faults reach ndgraph as plain signals.
[ -n "${ASAN_OPTIONS+x}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0:handle_sigbus=0:handle_abort=0"
expect_timeout=60 # a hang fails its case (exit 124), and never the suite

run_fault() { # STATUS PATTERN NAME PLUGIN [--set ...]: run with PLUGIN, one line, no step
  local st=$1 pat=$2 name=$3 plugin=$4
  shift 4
  expect "$st" "^ndgraph: $F/$plugin: $pat\$" "run: $name" -- \
    "$ndgraph" run $TINY --set train.steps=2 --set "kernels.plugins=[$F/$plugin]" "$@"
  ! grep -q "^step" "$tmp/out"
  ok $? "run: $name: no training step ran"
}

# ---- the start-up probe (a child process) names what died, exit 1
run_fault 1 "loading the plugin \(its constructors\): killed by signal 11 \(Segmentation fault\) in the start-up probe" \
  "a constructor that crashes" libfault_ctor.so
run_fault 1 "ndgraph_plugin_init: killed by signal 11 \(Segmentation fault\) in the start-up probe" \
  "an init that crashes" libfault_init.so
run_fault 1 "$K: killed by signal 11 \(Segmentation fault\) in the start-up probe" \
  "a kernel that crashes" libfault_segv.so $RES
run_fault 1 "$K: killed by signal 6 \(Aborted\) in the start-up probe" "a kernel that aborts" libfault_abort.so $RES
if [ -z "${ASAN_OPTIONS+x}" ]; then # AddressSanitizer reports a double free itself
  # the allocator's own line comes first; ours names the plugin
  timeout -k 10 60 "$ndgraph" run $TINY --set train.steps=2 --set "kernels.plugins=[$F/libfault_heap.so]" $RES \
    >"$tmp/out" 2>"$tmp/err"
  st=$?
  tail -n 1 "$tmp/err" |
    grep -qE "^ndgraph: $F/libfault_heap.so: $K: killed by signal 6 \(Aborted\) in the start-up probe$"
  ok $((st != 1 || $? != 0)) "run: a kernel that corrupts the heap (the allocator aborts): exit $st, the last line names it"
fi
run_fault 1 "$K: exited the process \(status 0\) in the start-up probe" "a kernel that calls exit(0)" \
  libfault_exit.so $RES
start=$(date +%s)
run_fault 1 "$K: no answer within 1 s in the start-up probe \(kernels.probe_timeout\); stopped" \
  "a kernel that never returns" libfault_spin.so $RES --set kernels.probe_timeout=1
[ $(($(date +%s) - start)) -lt 20 ]
ok $? "run: a kernel that never returns: stopped after the 1 s of kernels.probe_timeout"
expect 1 "^ndgraph: $F/libfault_segv.so: $K: killed by signal 11 \(Segmentation fault\) in the start-up probe$" \
  "plan: a kernel that crashes" -- "$ndgraph" plan $TINY --set "kernels.plugins=[$F/libfault_segv.so]" $RES
# a kernel that is not selected is not probed: the plugin loads and the run trains
"$ndgraph" run $TINY --set train.steps=1 --set "kernels.plugins=[$F/libfault_segv.so]" >"$tmp/out" 2>&1
st=$?
grep -q "^step     1 | loss" "$tmp/out"
ok $((st != 0 || $? != 0)) "run: a crashing kernel that is not selected is never called (exit $st)"

# ---- later in the run (a worker thread): one line from the signal handler, or from exit
# (where cores go to a program, whatever ulimit says, timeout adds a note of its own)
timeout -k 10 60 "$ndgraph" run $TINY --set train.steps=2 --set "kernels.plugins=[$F/libfault_late_segv.so]" $RES \
  >"$tmp/out" 2>"$tmp/err"
st=$?
grep -v "^timeout: the monitored command dumped core$" "$tmp/err" >"$tmp/ours"
[ "$st" -eq 139 ] && [ "$(wc -l <"$tmp/ours")" -eq 1 ] &&
  grep -qE "^ndgraph: $F/libfault_late_segv.so: $K: killed by signal 11 \(Segmentation fault\) while running$" "$tmp/ours"
ok $? "run: a kernel that crashes on a training step's sizes: the line, then the signal (exit $st)"
expect 1 "^ndgraph: $F/libfault_late_exit.so: $K: called exit\(0\) while running$" \
  "run: a kernel that calls exit(0) on a training step's sizes: exit 1, not 0" -- \
  "$ndgraph" run $TINY --set train.steps=2 --set "kernels.plugins=[$F/libfault_late_exit.so]" $RES

# ---- kernel-check: FAIL and exit 1, the line on stderr
check_fault() { # PATTERN NAME PLUGIN [--timeout S]
  local pat=$1 name=$2 plugin=$3
  shift 3
  expect 1 "^ndgraph: $F/$plugin: $pat\$" "kernel-check: $name" -- "$ndgraph" kernel-check "$@" "$F/$plugin" fault
  grep -q "^kernel-check fault ($F/$plugin): FAIL$" "$tmp/out"
  ok $? "kernel-check: $name: the verdict is FAIL"
}
check_fault "$K: killed by signal 11 \(Segmentation fault\) in kernel-check" "a kernel that crashes" libfault_segv.so
check_fault "ndgraph_plugin_init: killed by signal 11 \(Segmentation fault\) in kernel-check" "an init that crashes" \
  libfault_init.so
check_fault "$K: exited the process \(status 0\) in kernel-check" "a kernel that calls exit(0) is no pass" \
  libfault_exit.so
check_fault "$K: no answer within 1 s in kernel-check \(--timeout\); stopped" "a kernel that never returns" \
  libfault_spin.so --timeout 1
# the late faults are beyond kernel-check's sizes: it passes them, and prints every case
"$ndgraph" kernel-check "$F/libfault_late_segv.so" fault >"$tmp/out" 2>&1
st=$?
grep -q "^kernel-check fault (.*): PASS$" "$tmp/out" && [ "$(grep -c 'vs fp64: ok' "$tmp/out")" -eq 3 ]
ok $((st != 0 || $? != 0)) "kernel-check: a kernel right on the checked sizes passes, its 3 cases printed (exit $st)"
expect 2 "^ndgraph: --timeout '0': expected a whole number from 1 to 86400$" \
  "kernel-check: a timeout of 0 is refused" -- "$ndgraph" kernel-check --timeout 0 "$F/libfault_segv.so" fault

# ---- cost models: a negative cost or one that overflows the step's total is refused, exit 2
expect 2 "^ndgraph: $F/libfault_cost_neg.so: $K: the cost model gives -1 FLOPs for a task \(0 or more expected\)$" \
  "plan: a cost of -1 FLOPs" -- "$ndgraph" plan $TINY --set "kernels.plugins=[$F/libfault_cost_neg.so]" $RES
expect 2 "^ndgraph: $F/libfault_cost_max.so: $K: the cost model's FLOPs overflow the step's total \(9223372036854775807 for a task\)$" \
  "plan: a cost of INT64_MAX FLOPs" -- "$ndgraph" plan $TINY --set "kernels.plugins=[$F/libfault_cost_max.so]" $RES
expect 2 "^ndgraph: $F/libfault_cost_neg.so: $K: the cost model gives -1 FLOPs" "run: a cost of -1 FLOPs" -- \
  "$ndgraph" run $TINY --set train.steps=1 --set "kernels.plugins=[$F/libfault_cost_neg.so]" $RES

done_testing
