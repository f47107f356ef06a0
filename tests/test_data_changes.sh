#!/usr/bin/env bash
# What changes under a run: the training data cut short or rewritten with
# ids out of range stops it with one line naming the file (exit 1, never a
# signal), after a checkpoint of the steps done, which are those of a run
# that never saw the change; a save directory has one writer (a second run
# is refused, eval and resumes that write elsewhere are not, a killed
# writer leaves no lock behind); a resume on other data says so.
. "${ND_SRCDIR:-.}/tests/tap.sh"
# no long run outlives the test, whatever fails
trap 'kill -KILL $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set model.vocab_size=256 --set data.format=tokens-u16 --set train.micro_batch_size=2
      --set parallelism.micro_batches=2 --set train.eval_every=0 --set runtime.workers=2 --set log.every=1
      --set train.warmup_steps=1000000) # the learning rate of a step does not depend on train.steps

# 100000 u16 ids below 256, the same every time
python3 -c 'import random, struct, sys
random.seed(7)
sys.stdout.buffer.write(struct.pack("<100000H", *[random.randrange(256) for _ in range(100000)]))' >"$tmp/tok.bin"
data_args() { echo --set data.train="$1" --set data.val="$tmp/tok.bin"; }

# start NAME DATA SAVE_DIR [--set ...]: a long run in the background, its pid in
# $pid once its metrics hold step 3 (0), or 1 when it ended or took a minute
start() {
  local name=$1 data=$2 dir=$3; shift 3
  "$ndgraph" run "${tiny[@]}" $(data_args "$data") --set train.steps=1000000 --set train.save_dir="$dir" \
    --metrics "$tmp/$name.jsonl" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  for _ in $(seq 600); do
    grep -q '"step": 3,' "$tmp/$name.jsonl" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# finish: the exit status of $pid; one that has not ended within a minute is
# killed (the suite cannot hang) and reported as 137
finish() { wait_or_kill "$pid" 600; }

# same_as_reference DIR N: DIR/step-N holds the weights and moments of N
# steps on the unchanged data, byte for byte
same_as_reference() {
  local dir=$1 n=$2 f
  rm -rf "$tmp/ref"
  "$ndgraph" run "${tiny[@]}" $(data_args "$tmp/tok.bin") --set train.steps="$n" --set train.save_dir="$tmp/ref" \
    >/dev/null 2>&1 || return 1
  for f in model.safetensors optimizer.safetensors; do cmp -s "$dir/step-$n/$f" "$tmp/ref/step-$n/$f" || return 1; done
}

# stopped NAME DIR PATTERN: the run ended with exit 1, one line on stderr
# matching PATTERN, and a checkpoint of its last step, saved before stopping,
# that a run on the unchanged data reproduces
stopped() {
  local name=$1 dir=$2 pattern=$3 got=$4 n
  [ "$got" -eq 1 ]; ok $? "$name: exit 1, no signal (got $got)"
  [ "$(wc -l <"$tmp/$name.err")" -eq 1 ] && grep -qE -- "$pattern" "$tmp/$name.err"
  ok $? "$name: one line names the file and the problem: $(head -c 300 "$tmp/$name.err")"
  n=$(sed -n "s#^step  *\([0-9]*\) | checkpoint $dir/step-\1, before stopping\$#\1#p" "$tmp/$name.out")
  [ -n "$n" ] && [ "$(ls "$dir")" = "step-$n" ]; ok $? "$name: the steps done are saved (step-$n) before stopping"
  [ -n "$n" ] && same_as_reference "$dir" "$n"
  ok $? "$name: step-$n is what $n steps on the unchanged data give (the failed step was not applied)"
}

# (a) the file cut short while the run reads it (it was mapped: SIGBUS)
cp "$tmp/tok.bin" "$tmp/cut.bin"
start cut "$tmp/cut.bin" "$tmp/ck-cut"; ok $? "cut: the run is under way"
truncate -s 1000 "$tmp/cut.bin"
finish; got=$?
stopped cut "$tmp/ck-cut" "^ndgraph: $tmp/cut.bin: the file shrank to 1000 bytes while in use \(200000 when opened\): cannot read bytes [0-9]+ to [0-9]+\$" $got

# (b) rewritten in place with ids past the vocabulary (they trained to the end, exit 0)
cp "$tmp/tok.bin" "$tmp/ids.bin"
start ids "$tmp/ids.bin" "$tmp/ck-ids"; ok $? "ids: the run is under way"
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.write(b"\xff\xff" * 100000)' "$tmp/ids.bin"
finish; got=$?
stopped ids "$tmp/ck-ids" "^ndgraph: $tmp/ids.bin: token 65535 at offset [0-9]+ is >= vocab_size 256 \(the file changed while in use\)\$" $got

# (c) one writer per save directory
start first "$tmp/tok.bin" "$tmp/ck" --set train.save_every=2; ok $? "lock: the first run is under way"
first=$pid
expect_timeout=60 expect 1 "^ndgraph: $tmp/ck: another ndgraph run \(pid $first\) is writing its checkpoints there \(train.save_dir\)\$" \
  "lock: a second run on the same save_dir is refused, naming the folder and the first run's pid" -- \
  "$ndgraph" run "${tiny[@]}" $(data_args "$tmp/tok.bin") --set train.steps=2 --set train.save_dir="$tmp/ck"
! grep -q '^step ' "$tmp/out"; ok $? "lock: the second run trained nothing"
expect_timeout=60 expect 0 '' "lock: eval reads the save_dir the first run writes" -- \
  sh -c '"$@" >/dev/null && echo evaluated >&2' sh "$ndgraph" eval "${tiny[@]}" $(data_args "$tmp/tok.bin") \
  --checkpoint "$tmp/ck/step-2" --batches 2
timeout -k 10 60 "$ndgraph" run "${tiny[@]}" $(data_args "$tmp/tok.bin") --set train.steps=3 --resume "$tmp/ck/step-2" \
  --set train.save_dir="$tmp/ck-other" >"$tmp/other.out" 2>&1
ok $? "lock: a resume from it that saves elsewhere runs"
kill -0 "$first" 2>/dev/null; ok $? "lock: the first run goes on"
kill -TERM "$first"; finish; got=$?
[ "$got" -eq 143 ] && grep -q "^ndgraph: SIGTERM after step [0-9]*: checkpoint $tmp/ck/step-" "$tmp/first.out"
ok $? "lock: the first run ends as asked, with its checkpoint (exit $got)"
start killed "$tmp/tok.bin" "$tmp/ck"; ok $? "lock: a run starts once the first has ended"
kill -KILL "$pid"; finish
timeout -k 10 60 "$ndgraph" run "${tiny[@]}" $(data_args "$tmp/tok.bin") --set train.steps=2 --set train.save_dir="$tmp/ck" \
  >"$tmp/after.out" 2>&1
ok $? "lock: after a writer killed with SIGKILL, the next run writes there (no stale lock)"

# (d) a resume on other data than its checkpoint's steps read
cp "$tmp/tok.bin" "$tmp/other.bin"
expect_timeout=60 expect 0 "^ndgraph: note: $tmp/ck-other/step-3 was trained on $tmp/tok.bin \(its state.json\); this run goes on with data.train $tmp/other.bin\$" \
  "resume: other data gets a one-line note naming both" -- \
  "$ndgraph" run "${tiny[@]}" $(data_args "$tmp/other.bin") --set train.steps=4 --resume "$tmp/ck-other/step-3" \
  --set train.save_dir="$tmp/ck-note"
timeout -k 10 60 "$ndgraph" run "${tiny[@]}" $(data_args "$tmp/./tok.bin") --set train.steps=4 \
  --resume "$tmp/ck-other/step-3" --set train.save_dir="$tmp/ck-same" >"$tmp/same.out" 2>"$tmp/same.err"
[ $? -eq 0 ] && [ ! -s "$tmp/same.err" ]; ok $? "resume: the same file by another path gets no note"
done_testing
