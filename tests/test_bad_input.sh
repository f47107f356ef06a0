#!/usr/bin/env bash
# Bad input gets one line naming the file or step, a non-zero exit, and
# nothing lost: no checkpoint overwritten.
. "${ND_SRCDIR:-.}/tests/tap.sh"

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.micro_batch_size=2 --set parallelism.micro_batches=2 --set train.steps=3 --set train.eval_every=0
      --set runtime.workers=2)

expect 1 "$tmp/missing.bin.*(No such file|cannot open)" "a missing data file is named" -- \
  "$ndgraph" run "${tiny[@]}" --set data.train="$tmp/missing.bin" --set train.save_dir="$tmp/never"
[ ! -e "$tmp/never" ]
ok $? "a run that cannot read its data creates no save directory"
expect 1 "$tmp/missing-val.bin.*(No such file|cannot open)" "a missing validation file is named" -- \
  "$ndgraph" run "${tiny[@]}" --set data.val="$tmp/missing-val.bin" --set train.save_dir="$tmp/never"
[ ! -e "$tmp/never" ]
ok $? "nor one that cannot read its validation data"
printf 'short' >"$tmp/short.txt"
expect 1 "$tmp/short.txt.*need at least" "a data file shorter than one sequence is named" -- \
  "$ndgraph" run "${tiny[@]}" --set data.train="$tmp/short.txt"
python3 -c "
import struct,sys
open('$tmp/big.bin','wb').write(struct.pack('<200H', *([1]*150 + [300] + [1]*49)))"
expect 1 "$tmp/big.bin.*300.*vocab_size" "a token id >= vocab_size is named with its offset" -- \
  "$ndgraph" run "${tiny[@]}" --set data.format=tokens-u16 --set model.vocab_size=256 --set data.train="$tmp/big.bin" \
  --set data.val="$tmp/big.bin"
# the ids are checked chunk by chunk (data/dataset.c): a bad one past the first chunk of 2^20 ids is still
# found, with its own offset
python3 -c "
import struct
d = bytearray(2 * 1600000)
struct.pack_into('<H', d, 2 * 1500001, 257)
open('$tmp/far.bin', 'wb').write(d)"
expect 1 "$tmp/far.bin: token 257 at offset 3000002 is >= vocab_size 256" \
  "a bad token id past the first checked chunk is named with its offset" -- \
  "$ndgraph" run "${tiny[@]}" --set data.format=tokens-u16 --set model.vocab_size=256 --set data.train="$tmp/far.bin" \
  --set data.val="$tmp/far.bin"
expect 1 "$tmp/nope: cannot open directory" "an unreadable checkpoint (neither a step-N nor a save folder) is named" -- \
  "$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/nope"

# a good checkpoint, then one of another shape
"$ndgraph" run "${tiny[@]}" --set train.save_dir="$tmp/ck" >/dev/null 2>&1
ok $? "a small run writes a checkpoint"
expect 1 "wte.weight.*shape" "a checkpoint whose shapes do not match names the tensor" -- \
  "$ndgraph" eval "${tiny[@]}" --set model.n_embd=64 --checkpoint "$tmp/ck/step-3"
printf 'garbage' >"$tmp/ck-bad.safetensors"; mkdir -p "$tmp/ck-bad"; cp "$tmp/ck-bad.safetensors" "$tmp/ck-bad/model.safetensors"
expect 1 "$tmp/ck-bad/model.safetensors" "a corrupt checkpoint is named" -- \
  "$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/ck-bad"

# a checkpoint whose weights are finite but huge (a NaN is refused at load):
# resuming from it stops at the first non-finite loss and writes nothing
cp -r "$tmp/ck/step-3" "$tmp/nan"
python3 - "$tmp/nan/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
begin, end = json.loads(data[8:8 + n])["wte.weight"]["data_offsets"]
data[8 + n + begin:8 + n + end] = struct.pack("<f", 3e38) * ((end - begin) // 4)
open(path, "wb").write(data)
PY
sum_before=$(cat "$tmp/ck/step-3/"* | md5sum)
expect 1 "step 4: the loss is not finite" "a non-finite loss stops the run, naming the step" -- \
  "$ndgraph" run "${tiny[@]}" --set train.steps=6 --set train.save_every=1 --set train.save_dir="$tmp/ck" \
  --resume "$tmp/nan"
sum_after=$(cat "$tmp/ck/step-3/"* | md5sum)
[ "$sum_before" = "$sum_after" ] && [ ! -e "$tmp/ck/step-4" ]
ok $? "the earlier checkpoint is intact and no later one was written"

printf 'model:\n  n_head: 3\n' >"$tmp/bad.yaml"
expect 2 "^$tmp/bad.yaml:2:[0-9]+: error: " "a bad configuration exits 2 with FILE:LINE:COL" -- \
  "$ndgraph" run "$tmp/bad.yaml"
expect 2 "^--set:1:[0-9]+: error: .*model.n_layers" "an unknown --set key exits 2" -- \
  "$ndgraph" plan --set model.n_layers=3
expect 2 "^ndgraph: --nodes '2x': expected a whole number" "a count with trailing text exits 2, naming the option" -- \
  "$ndgraph" plan --nodes 2x
expect 2 "^ndgraph: --batches '99999999999999999999': expected a whole number" \
  "a count past the integers' range exits 2, naming the option" -- \
  "$ndgraph" eval --checkpoint "$tmp/ck/step-3" --batches 99999999999999999999
expect 2 "^ndgraph: --batches '99999999999999': expected a whole number from 1 to 65536$" \
  "eval --batches beyond train.eval_batches' bound is refused, not run for days" -- \
  "$ndgraph" eval --checkpoint "$tmp/ck/step-3" --batches 99999999999999
expect 2 "^error: the configuration file's name is empty$" "an empty configuration path is named as such" -- \
  "$ndgraph" plan ""
for opt in "eval --checkpoint" "run --resume" "calibrate -o" "plan --dot"; do
  expect 2 "^ndgraph: ${opt#* } needs a value, not an empty one$" "$opt '': an empty path is refused before any work" -- \
    "$ndgraph" $opt ""
done
expect 1 "^ndgraph: the output file's name is empty$" "trace svg -o '': nothing written, one line" -- \
  "$ndgraph" trace svg "$srcdir/tests/traces/handmade.json" -o ""
# a key with a newline and a name too long (found by scripts/fuzz-config.sh): the error quotes the key on the
# same line, its control characters as '?'
expect 2 "^--set:1:[0-9]+: error: kernels.override.a\\?b: a name of 1 to 63 bytes is expected$" \
  "--set with a newline in the key: one line" -- "$ndgraph" plan --set "kernels.override.a
b=$(printf 'v%.0s' $(seq 1 70))"
mkfifo "$tmp/fifo.yaml" # never written: reading it must not wait
expect_timeout=60 expect 2 "fifo.yaml: error: cannot read: not a regular file" \
  "a FIFO as the configuration: one line, exit 2, no wait for a writer" -- "$ndgraph" plan "$tmp/fifo.yaml"
expect_timeout=60 expect 2 "^ndgraph: $tmp/fifo.yaml: cannot read the topology: not a regular file$" \
  "a FIFO as runtime.topology: one line, exit 2, no wait for a writer" -- "$ndgraph" plan --set runtime.topology="$tmp/fifo.yaml"
expect 2 "^ndgraph: $tmp/bad.yaml: not an hwloc XML topology" "a topology that is not hwloc XML says so" -- \
  "$ndgraph" plan --set runtime.topology="$tmp/bad.yaml"
expect 2 "^ndgraph: $tmp/none.xml: cannot read the topology: No such file or directory$" \
  "a missing topology says it is missing" -- "$ndgraph" plan --set runtime.topology="$tmp/none.xml"
printf 'keep me\n' >"$tmp/step.dot"; chmod 0600 "$tmp/step.dot"; mkdir "$tmp/ro"; chmod 0555 "$tmp/ro"
"$ndgraph" plan --dot "$tmp/step.dot" >/dev/null 2>&1
grep -q '^digraph step' "$tmp/step.dot" && ! ls "$tmp" | grep -q 'step.dot.tmp' && [ "$(stat -c %a "$tmp/step.dot")" = 600 ]
ok $? "plan --dot replaces its file whole, with its mode, leaving no temporary file"
# a read-only file is one the user wants kept, even by root (whom its directory lets replace it)
printf 'keep me\n' >"$tmp/ro.dot"; chmod 0444 "$tmp/ro.dot"
expect 1 "^ndgraph: $tmp/ro.dot: not writable \\(read-only\\)$" "plan --dot refuses a read-only file" -- \
  "$ndgraph" plan --dot "$tmp/ro.dot"
[ "$(cat "$tmp/ro.dot")" = "keep me" ] && [ "$(stat -c %a "$tmp/ro.dot")" = 444 ]
ok $? "plan --dot leaves a read-only file as it was"
expect 1 "^ndgraph: $tmp/ro.dot: not writable \\(read-only\\)$" "run --trace refuses a read-only file before any step" -- \
  "$ndgraph" run "${tiny[@]}" --trace "$tmp/ro.dot"
expect 1 "^ndgraph: $tmp/ro.dot: not writable \\(read-only\\)$" "calibrate -o refuses a read-only file" -- \
  "$ndgraph" calibrate -o "$tmp/ro.dot"
# a file that exists where no new file can be made beside it (/proc): the reason, not "No such file or directory"
expect 1 "^ndgraph: /proc/version: not writable \\((read-only|Permission denied)\\)$" \
  "plan --dot /proc/version says why it cannot be written" -- "$ndgraph" plan --dot /proc/version
expect 1 "^ndgraph: /proc/self/comm: cannot replace: its directory takes no new files$" \
  "plan --dot /proc/self/comm says why it cannot be replaced" -- "$ndgraph" plan --dot /proc/self/comm
if [ "$(id -u)" != 0 ]; then
  expect 1 "$tmp/ro/step.dot" "plan --dot into a directory it cannot write names the file" -- \
    "$ndgraph" plan --dot "$tmp/ro/step.dot"
fi
# train.recompute names its values
expect 2 "train.recompute: expected one of: none, attention, layer; got 'everything'" \
  "a train.recompute that is not none, attention or layer is one line, exit 2" -- \
  "$ndgraph" run "${tiny[@]}" --set train.recompute=everything
done_testing
