#!/usr/bin/env bash
# A long run on a shared machine: SIGINT, SIGTERM, SIGHUP, SIGPIPE and SIGUSR1
# finish the step in flight, write a checkpoint and say where (exit 130, 143,
# 129, 141; SIGUSR1 goes on; SIGHUP ignored under nohup); a second SIGINT stops at once; train.keep_checkpoints keeps the newest
# complete checkpoints; the temporaries of dead writers go at the next start.
. "${ND_SRCDIR:-.}/tests/tap.sh"
# no long run outlives the test, whatever fails
trap 'kill -KILL $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.micro_batch_size=2 --set parallelism.micro_batches=2 --set train.eval_every=0
      --set runtime.workers=2 --set log.every=1 --set train.steps=1000000)

# start NAME SAVE_DIR [--set ...]: a long run in the background (under $launch, a command
# such as nohup, when set), its pid in $pid once step 2 is done. Otherwise it starts with
# SIGHUP at its default, whatever the suite's: under `nohup make check` every child
# inherits SIGHUP ignored, and a run started so keeps ignoring it, as it should
start() {
  local name=$1 dir=$2; shift 2
  ${launch:-env --default-signal=HUP} "$ndgraph" run "${tiny[@]}" --set train.save_dir="$dir" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  for _ in $(seq 600); do
    grep -q "^step  *2 " "$tmp/$name.out" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# finish: the exit status of $pid once it ends; a run that ignores the
# signal is killed after two minutes (so that the suite cannot hang) and
# reported as 137
finish() { wait_or_kill "$pid" 1200; }

# the directories step-* of DIR all hold the four files
all_complete() {
  local d
  for d in "$1"/step-*; do
    [ -f "$d/model.safetensors" ] && [ -f "$d/optimizer.safetensors" ] && [ -f "$d/config.json" ] &&
      [ -f "$d/state.json" ] || return 1
  done
}

for sig in TERM INT HUP; do
  want=$(case $sig in TERM) echo 143 ;; INT) echo 130 ;; HUP) echo 129 ;; esac)
  start "$sig" "$tmp/ck-$sig"; ok $? "SIG$sig: the run is under way"
  kill -"$sig" "$pid"; finish; got=$?
  line=$(grep "SIG$sig" "$tmp/$sig.out")
  what=SIG$sig; [ $sig = HUP ] && what="SIGHUP (the terminal closed)"
  step=$(sed -n "s|^ndgraph: $what after step \([0-9]*\): checkpoint $tmp/ck-$sig/step-\1; stopping\$|\1|p" \
         "$tmp/$sig.out")
  [ "$got" -eq "$want" ]; ok $? "SIG$sig: exit $want (got $got)"
  [ -n "$step" ] && [ "$(grep -c SIG "$tmp/$sig.out")" -eq 1 ]
  ok $? "SIG$sig: one line names the checkpoint ($line)"
  [ -n "$step" ] && all_complete "$tmp/ck-$sig" && [ -d "$tmp/ck-$sig/step-$step" ] &&
    grep -q "\"step\":$step," "$tmp/ck-$sig/step-$step/state.json"
  ok $? "SIG$sig: step-$step is complete and holds step $step"
done

"$ndgraph" run "${tiny[@]}" --set train.steps=3 --resume "$tmp/ck-TERM" --set train.save_dir="$tmp/ck-TERM" \
  >"$tmp/resume.out" 2>&1
grep -q "^nothing to do: the checkpoint is at step [0-9]*, train.steps is 3" "$tmp/resume.out"
ok $? "a resume past train.steps says there is nothing to do"

start USR1 "$tmp/ck-USR1"; ok $? "SIGUSR1: the run is under way"
kill -USR1 "$pid"
for _ in $(seq 600); do grep -q SIGUSR1 "$tmp/USR1.out" && break; sleep 0.1; done
step=$(sed -n "s|^ndgraph: SIGUSR1 after step \([0-9]*\): checkpoint $tmp/ck-USR1/step-\1; training goes on\$|\1|p" \
       "$tmp/USR1.out")
[ -n "$step" ] && [ -d "$tmp/ck-USR1/step-$step" ]; ok $? "SIGUSR1: a checkpoint, named in one line (step $step)"
kill -0 "$pid" 2>/dev/null; ok $? "SIGUSR1: the run goes on"
n=$(grep -c '^step ' "$tmp/USR1.out")
for _ in $(seq 600); do [ "$(grep -c '^step ' "$tmp/USR1.out")" -gt $((n + 2)) ] && break; sleep 0.1; done
[ "$(grep -c '^step ' "$tmp/USR1.out")" -gt $((n + 2)) ]; ok $? "SIGUSR1: steps after the checkpoint"
kill -TERM "$pid"; finish; ok $(($? != 143)) "SIGUSR1 then SIGTERM: exit 143"

# started under nohup (SIGHUP ignored): a hangup changes nothing
launch=nohup start NOHUP "$tmp/ck-NOHUP"; ok $? "nohup: the run is under way"
kill -HUP "$pid"
n=$(grep -c '^step ' "$tmp/NOHUP.out")
for _ in $(seq 600); do [ "$(grep -c '^step ' "$tmp/NOHUP.out")" -gt $((n + 2)) ] && break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && [ "$(grep -c '^step ' "$tmp/NOHUP.out")" -gt $((n + 2)) ] && ! grep -q SIGHUP "$tmp/NOHUP.out"
ok $? "nohup: SIGHUP stays ignored, steps go on"
kill -TERM "$pid"; finish; ok $(($? != 143)) "nohup: SIGTERM still stops it, exit 143"

# a second SIGINT: no waiting for the checkpoint; whatever is left is complete, and one line on stderr says
# which. Two signals sent at once merge into one, so the second comes 0.05 s after the first, both early in
# a step of about two seconds here (a larger model; a CPU several times faster still takes far longer than
# the gap), just after the line of the step before
slow=(--set model.n_layer=8 --set model.n_embd=256 --set model.seq_len=128 --set train.micro_batch_size=8)
# next_line FILE PATTERN: waits for one more line matching PATTERN in FILE
next_line() {
  local n; n=$(grep -c "$2" "$1")
  for _ in $(seq 1000); do [ "$(grep -c "$2" "$1")" -gt "$n" ] && return 0; sleep 0.02; done; return 1
}
start INT2 "$tmp/ck-INT2" --set train.save_every=2 "${slow[@]}"; ok $? "double SIGINT: the run is under way"
# after an odd step's line no checkpoint is written: the next step begins
next_line "$tmp/INT2.out" "^step  *[0-9]*[13579] | loss"; kill -INT "$pid"; sleep 0.05; kill -INT "$pid"; finish; got=$?
[ "$got" -eq 130 ]; ok $? "double SIGINT: exit 130 (got $got)"
all_complete "$tmp/ck-INT2"; ok $? "double SIGINT: every step-N left is complete"
step=$(sed -n "s|^ndgraph: a second SIGINT: stopped at once, the checkpoint the first asked for abandoned; the last complete one, $tmp/ck-INT2/step-\([0-9]*\), is intact\$|\1|p" \
       "$tmp/INT2.err")
[ -n "$step" ] && [ -d "$tmp/ck-INT2/step-$step" ] && [ "$(wc -l <"$tmp/INT2.err")" -eq 1 ] && ! grep -q SIGINT "$tmp/INT2.out"
ok $? "double SIGINT: one line on stderr names the last complete checkpoint ($(head -c 300 "$tmp/INT2.err"))"
# no checkpoint yet (train.save_every 0): the line says there is none
start INT3 "$tmp/ck-INT3" "${slow[@]}"; ok $? "double SIGINT, nothing saved yet: the run is under way"
next_line "$tmp/INT3.out" "^step .*loss"; kill -INT "$pid"; sleep 0.05; kill -INT "$pid"; finish; got=$?
[ "$got" -eq 130 ] && [ "$(cat "$tmp/INT3.err")" = "ndgraph: a second SIGINT: stopped at once, the checkpoint the first asked for abandoned; $tmp/ck-INT3 holds no complete one" ]
ok $? "double SIGINT before any checkpoint: exit 130, one line saying none is complete ($(head -c 300 "$tmp/INT3.err"))"

# a closed standard output (`ndgraph run | head`): the step in flight ends, a
# checkpoint is written and named on stderr, exit 141 (it used to kill the run)
"$ndgraph" run "${tiny[@]}" --set train.save_dir="$tmp/ck-PIPE" 2>"$tmp/PIPE.err" | head -3 >/dev/null
got=${PIPESTATUS[0]}
[ "$got" -eq 141 ]; ok $? "SIGPIPE: exit 141 (got $got)"
step=$(sed -n "s|^ndgraph: SIGPIPE (standard output closed) after step \([0-9]*\): checkpoint $tmp/ck-PIPE/step-\1; stopping\$|\1|p" \
       "$tmp/PIPE.err")
[ -n "$step" ] && all_complete "$tmp/ck-PIPE" && [ -d "$tmp/ck-PIPE/step-$step" ]
ok $? "SIGPIPE: one line on stderr names the complete checkpoint ($(head -c 200 "$tmp/PIPE.err"))"

# a signal sent while the run starts (its signals blocked since main() began,
# /proc/PID/status's SigBlk, and the runtime not yet up) waits for the handler:
# it used to meet the default action or a library's handler, or be dropped
# when the shell started the run with SIGINT ignored, as `&` in a script does
early() { # SIG: the run's step line, once its main thread blocks SIG
  local sig=$1 bit
  bit=$(kill -l "$sig")
  "$ndgraph" run "${tiny[@]}" --set train.steps=3 --set train.save_dir="$tmp/early-$sig" \
    >"$tmp/early-$sig.out" 2>&1 &
  pid=$!
  for _ in $(seq 3000); do
    # ndgraph itself, not the build tree's libtool wrapper (a shell that blocks signals of its own)
    case $(readlink "/proc/$pid/exe" 2>/dev/null) in
    *ndgraph)
      mask=$(sed -n 's/^SigBlk:\t*//p' "/proc/$pid/status" 2>/dev/null)
      [ -n "$mask" ] && (( (16#$mask >> (bit - 1)) & 1 )) && break ;;
    esac
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.001
  done
  grep -q "^step" "$tmp/early-$sig.out"; local started=$?
  kill -"$sig" "$pid"
  finish
  got=$?
  [ $started -ne 0 ]; ok $? "SIG$sig while the run starts: sent before its first step"
}
early USR1
[ "$got" -eq 0 ] && grep -q "^ndgraph: SIGUSR1 after step 1: checkpoint $tmp/early-USR1/step-1; training goes on$" \
  "$tmp/early-USR1.out" && [ -d "$tmp/early-USR1/step-3" ]
ok $? "SIGUSR1 while the run starts: a checkpoint after step 1, then on to step 3 (exit $got)"
early INT
[ "$got" -eq 130 ] && grep -q "^ndgraph: SIGINT after step 1: checkpoint $tmp/early-INT/step-1; stopping$" \
  "$tmp/early-INT.out"
ok $? "SIGINT while the run starts, from a script (SIGINT inherited ignored): stops after step 1 (exit $got)"

# retention: the newest 2 complete checkpoints stay
"$ndgraph" run "${tiny[@]}" --set train.steps=5 --set train.save_every=1 --set train.keep_checkpoints=2 \
  --set train.save_dir="$tmp/keep" >"$tmp/keep.out" 2>&1
ok $? "keep_checkpoints 2: the run succeeds"
# (the run's lock stays: one writer per save_dir)
[ "$(cd "$tmp/keep" && ls -A | grep -vx .lock | tr '\n' ' ')" = "step-4 step-5 " ]
ok $? "keep_checkpoints 2: step-4 and step-5 remain, nothing else ($(ls -A "$tmp/keep" | tr '\n' ' '))"
# an incomplete newer directory is not counted, not deleted, and not resumed from silently
mkdir "$tmp/keep/step-9"; cp "$tmp/keep/step-5/model.safetensors" "$tmp/keep/step-9/"
"$ndgraph" run "${tiny[@]}" --set train.steps=6 --set train.keep_checkpoints=1 --resume "$tmp/keep" \
  --set train.save_dir="$tmp/keep" >"$tmp/keep2.out" 2>&1
ok $? "keep_checkpoints 1: resuming and saving succeeds"
grep -q "^$tmp/keep/step-9 is incomplete (no optimizer.safetensors): resuming from the older step-5" "$tmp/keep2.out"
ok $? "resume names the newer incomplete checkpoint it did not use"
[ "$(cd "$tmp/keep" && ls -A | grep -vx .lock | tr '\n' ' ')" = "step-6 step-9 " ]
ok $? "keep_checkpoints 1: only step-6 of the complete ones ($(ls -A "$tmp/keep" | tr '\n' ' '))"

# stale temporaries: those of dead processes go, a live one's stays, checkpoints stay
sh -c 'exit 0' & dead=$!; wait $dead
mkdir -p "$tmp/stale/.step-7.tmp-$dead/x" "$tmp/stale/.step-8.del-$dead" "$tmp/stale/.step-9.tmp-$$"
cp -r "$tmp/keep/step-6" "$tmp/stale/step-6"
cp -r "$tmp/keep/step-6" "$tmp/stale/.step-5.old-$dead" # killed between its two renames: put back
"$ndgraph" run "${tiny[@]}" --set train.steps=1 --set train.save_dir="$tmp/stale" >"$tmp/stale.out" 2>&1
ok $? "a run in a save_dir with leftovers succeeds"
grep -q "^checkpoint: $tmp/stale: removed 2 temporary directories of stopped runs, put back 1 checkpoint$" \
  "$tmp/stale.out"
ok $? "one line says what was cleaned ($(grep '^checkpoint:' "$tmp/stale.out"))"
[ "$(cd "$tmp/stale" && ls -A | grep -vx .lock | tr '\n' ' ')" = ".step-9.tmp-$$ step-1 step-5 step-6 " ]
ok $? "dead writers' temporaries removed, a live one's kept, checkpoints kept ($(ls -A "$tmp/stale" | tr '\n' ' '))"
done_testing
