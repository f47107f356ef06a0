#!/usr/bin/env bash
# Inputs a hostile user gives ndgraph: each gets one line on stderr naming the
# file or key, a non-zero exit and no hang, or it simply works (issue 16's
# defects, one or more cases each). `timeout` only guards against a hang.
. "${ND_SRCDIR:-.}/tests/tap.sh"

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.micro_batch_size=1 --set parallelism.micro_batches=1 --set train.eval_every=0
      --set runtime.workers=2 --set train.steps=1 --set train.save_dir=)

expect_timeout=120 # a refused run must not hang

# 1. more than 64 ranks in a group
timeout 300 "$ndgraph" run "${tiny[@]}" --set parallelism.data_parallel_size=65 --set parallelism.pipeline_parallel_size=1 \
  >"$tmp/out" 2>&1
st=$?
[ $st -eq 0 ] && grep -q "^step     1 | loss" "$tmp/out"; ok $? "data_parallel_size 65 trains a step (exit $st)"

# 2. absurd and non-finite trace times; 4. a trace of many events per worker
printf '{"traceEvents": [{"ph": "X", "name": "ok", "pid": 0, "tid": 0, "ts": 0, "dur": 5},
  {"ph": "X", "name": "huge", "pid": 0, "tid": 0, "ts": 1e308, "dur": 1e308}]}' >"$tmp/huge.json"
expect 2 "$tmp/huge.json: event 1 \(\"huge\"\): ts 1e\+308 is not a time" "trace svg: a huge ts is an error naming the event" -- \
  "$ndgraph" trace svg "$tmp/huge.json" -o "$tmp/huge.svg"
expect 2 "$tmp/huge.json: event 1 \(\"huge\"\)" "trace summarize: a huge ts is an error naming the event" -- \
  "$ndgraph" trace summarize "$tmp/huge.json"
printf '[{"ph": "X", "name": "a", "ts": 0, "dur": 1e400}]' >"$tmp/inf.json"
expect 2 "$tmp/inf.json: event 0 \(\"a\"\): dur inf is not a time" "a non-finite dur is an error naming the event" -- \
  "$ndgraph" trace summarize "$tmp/inf.json"
printf '[{"ph": "X", "name": "a", "ts": 0, "dur": 1e-320}, {"ph": "X", "name": "b", "tid": 1, "ts": 0, "dur": 0}]' \
  >"$tmp/tiny.json"
timeout 60 "$ndgraph" trace svg "$tmp/tiny.json" -o "$tmp/tiny.svg" >/dev/null 2>&1
ok $? "trace svg: a span of 1e-320 us draws its chart"
python3 - "$tmp/many.json" <<'PY'
import json, sys
# two workers, 30000 back-to-back tasks each, worker 1 waiting on worker 0 at the end
ev = []
for w in range(2):
    for i in range(30000):
        ev.append({"ph": "X", "name": "k%d" % (i % 7), "pid": 0, "tid": w, "ts": w * 10 + i * 2.0, "dur": 1.5,
                   "args": {"phase": "F"}})
json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
PY
timeout 300 "$ndgraph" trace summarize "$tmp/many.json" --json >"$tmp/many.out" 2>&1
python3 - "$tmp/many.out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
# the last task ends on worker 1; with no arrows its chain is worker 1's own tasks
assert s["tasks"] == 60000 and len(s["critical_path"]["tasks"]) == 30000, s["critical_path"]["length_us"]
assert {k["name"]: k["count"] for k in s["per_kind"]}["k0"] == 2 * 4286
PY
ok $? "trace summarize: 60000 events, the chain of 30000 and the counts per kind"

# 3. a FIFO (or a directory) where a data file is expected
mkfifo "$tmp/fifo"
expect 1 "$tmp/fifo: not a regular file" "a FIFO as data.train is refused" -- \
  "$ndgraph" run "${tiny[@]}" --set data.train="$tmp/fifo"
expect 1 "$tmp/fifo: not a regular file" "a FIFO as data.val is refused" -- \
  "$ndgraph" run "${tiny[@]}" --set data.val="$tmp/fifo" --set train.eval_every=1
expect 1 "$tmp: not a regular file" "a directory as data.train is refused" -- \
  "$ndgraph" run "${tiny[@]}" --set data.train="$tmp"
"$ndgraph" run "${tiny[@]}" --set train.save_dir="$tmp/ck" >/dev/null 2>&1; ok $? "a small run writes a checkpoint"
expect 1 "$tmp/fifo: not a regular file" "a FIFO as eval --data is refused" -- \
  "$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/ck/step-1" --data "$tmp/fifo"
expect 2 "$tmp/fifo: not a regular file" "a FIFO as trace summarize's file is refused" -- \
  "$ndgraph" trace summarize "$tmp/fifo"
mkdir "$tmp/ck-fifo" && cp "$tmp/ck/step-1/"*.json "$tmp/ck-fifo/" && mkfifo "$tmp/ck-fifo/model.safetensors"
expect 1 "$tmp/ck-fifo/model.safetensors: not a regular file" "a FIFO as a checkpoint file is refused" -- \
  "$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/ck-fifo"

# 11. eval --data does not need data.train
"$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/ck/step-1" --data builtin:tales-val --set data.train="$tmp/missing" \
  >"$tmp/out" 2>"$tmp/err"
ok $? "eval --data works though data.train is missing ($(head -c 200 "$tmp/err"))"

# 5. a NaN in the weights is named at load, by eval and by a resume
cp -r "$tmp/ck/step-1" "$tmp/nan"
python3 - "$tmp/nan/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
begin = json.loads(data[8:8 + n])["wte.weight"]["data_offsets"][0]
data[8 + n + begin + 8:8 + n + begin + 12] = struct.pack("<f", float("nan"))
open(path, "wb").write(data)
PY
expect 1 "$tmp/nan/model.safetensors: tensor wte.weight holds a non-finite value \(nan at element 2\)" \
  "eval: a NaN in the weights names the file and tensor" -- "$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/nan"
expect 1 "$tmp/nan/model.safetensors: tensor wte.weight holds a non-finite value" \
  "run --resume: a NaN in the weights names the file and tensor" -- \
  "$ndgraph" run "${tiny[@]}" --set train.steps=3 --resume "$tmp/nan"

# 8. a checkpoint of another model is refused by its config.json, with both values
cp -r "$tmp/ck/step-1" "$tmp/other"
python3 - "$tmp/other/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["n_layer"] = 3
json.dump(c, open(sys.argv[1], "w"))
PY
expect 1 "$tmp/other/config.json: n_layer is 3, the configuration has model.n_layer 2" \
  "a config.json that differs names the field and both values" -- "$ndgraph" eval "${tiny[@]}" --checkpoint "$tmp/other"

# 9. an unwritable save_dir is found before the first step
printf 'x' >"$tmp/file"
expect 1 "$tmp/file: cannot create directory: exists and is not a directory" \
  "a save_dir under a file is refused before training" -- "$ndgraph" run "${tiny[@]}" --set train.save_dir="$tmp/file/ck"
grep -q "^step" "$tmp/out"; ok $((! $?)) "and no step ran"
expect 1 "/proc/ndgraph-no: cannot create directory" "a save_dir that cannot be created is refused before training" -- \
  "$ndgraph" run "${tiny[@]}" --set train.save_dir=/proc/ndgraph-no/ck
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
  expect 1 "$tmp/ro: cannot write checkpoints there \(train.save_dir\)" "a read-only save_dir is refused before training" -- \
    "$ndgraph" run "${tiny[@]}" --set train.save_dir="$tmp/ro"
else
  ok 0 "# SKIP a read-only save_dir (root writes anywhere)"
fi

# 10. a metrics file or a trace that cannot be written is named, not lost in silence
expect 1 "/dev/full: cannot write the metrics file: No space left on device" \
  "a metrics file on a full disk stops the run with its name" -- "$ndgraph" run "${tiny[@]}" --metrics /dev/full \
  --set train.steps=3 --set train.save_dir="$tmp/ck-metrics"
[ -f "$tmp/ck-metrics/step-1/optimizer.safetensors" ] && ! [ -e "$tmp/ck-metrics/step-2" ]
ok $? "and the step it reached is saved before it stops ($(ls "$tmp/ck-metrics" 2>&1 | tr '\n' ' '))"
mkfifo "$tmp/metrics.fifo" # nobody reads it: the run must not wait for a reader
expect_timeout=60 expect 1 "$tmp/metrics.fifo: cannot open the metrics file: a FIFO that nobody reads" \
  "a metrics FIFO that nobody reads is an error, not a hang" -- "$ndgraph" run "${tiny[@]}" --metrics "$tmp/metrics.fifo"
expect 1 "$tmp/no/such/t.json: cannot create: No such file or directory" \
  "a trace that cannot be created is named as the user wrote it" -- "$ndgraph" run "${tiny[@]}" --trace "$tmp/no/such/t.json"
grep -q "^step" "$tmp/out"; ok $((! $?)) "and it is found before the first step"
expect 1 "/dev/full: cannot write: No space left on device" "a trace that fails when written stops the run" -- \
  "$ndgraph" run "${tiny[@]}" --trace /dev/full --set train.steps=3 --set train.save_dir="$tmp/ck-trace"
[ -f "$tmp/ck-trace/step-2/optimizer.safetensors" ] && ! [ -e "$tmp/ck-trace/step-3" ]
ok $? "and the traced step is saved before it stops ($(ls "$tmp/ck-trace" 2>&1 | tr '\n' ' '))"

# 12. a key refused after validation names where its value came from (no file: --set), at its position
expect 2 "^--set:1:18: error: kernels.override: unknown task kind 'gelu'$" \
  "a --set key refused when the kernels are chosen names --set" -- "$ndgraph" run "${tiny[@]}" --set "kernels.override={gelu: x}"

expect 2 "^ndgraph: the built-in defaults and --set: the step needs [0-9.]+ GB of host memory" \
  "a configuration refused as a whole names the defaults and --set it came from" -- \
  "$ndgraph" run "${tiny[@]}" --set model.n_embd=65536 --set model.n_head=64

# 13. more workers than cores: the run goes on, and says the workers share cores
over=$(( $(getconf _NPROCESSORS_ONLN) + 1 ))
"$ndgraph" run "${tiny[@]}" --set runtime.workers=$over >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 0 ] && grep -q "^ndgraph: note: runtime.workers $over (with 0 device drivers) on $((over - 1)) cores: the workers share cores" "$tmp/err"
ok $? "runtime.workers above the cores: a note, and the step runs (exit $st: $(head -c 200 "$tmp/err"))"

# 14. a fresh run in a save_dir that holds an earlier run's checkpoints says so once a step has run
"$ndgraph" run "${tiny[@]}" --set train.steps=2 --set train.save_dir="$tmp/ck-earlier" >/dev/null 2>&1
"$ndgraph" run "${tiny[@]}" --set train.save_dir="$tmp/ck-earlier" >"$tmp/out" 2>"$tmp/err"
grep -q "^ndgraph: note: $tmp/ck-earlier already holds checkpoints up to step-2: " "$tmp/err" && [ -d "$tmp/ck-earlier/step-2" ]
ok $? "a fresh run among an earlier run's checkpoints: a note, theirs kept ($(head -c 160 "$tmp/err"))"
"$ndgraph" run "${tiny[@]}" --set train.steps=3 --set train.save_dir="$tmp/ck-earlier" --resume "$tmp/ck-earlier" \
  >"$tmp/out" 2>"$tmp/err"
! grep -q "note:" "$tmp/err"; ok $? "and no note when it resumes"

# 11. a model larger than the machine: refused at start with the numbers, unless allowed
big=(--set model.n_layer=64 --set model.n_embd=4096 --set model.n_head=32 --set model.seq_len=64
     --set runtime.workers=2 --set train.steps=1 --set train.save_dir=)
expect 2 "the step needs [0-9.]+ GB of host memory \(RAM\) for 2 ranks .* which has [0-9.]+ GB: .*runtime.allow_oversubscribe" \
  "a model larger than the RAM is refused at start with both sizes" -- "$ndgraph" run "${big[@]}"
# allowed, in an address space too small for it: the allocation fails and says how much
# (AddressSanitizer reserves terabytes of address space: no ulimit -v under it)
if [ -n "${ASAN_OPTIONS:-}" ]; then ok 0 "# SKIP ulimit -v under AddressSanitizer"; else
expect 1 "executor: out of memory allocating [0-9.]+ GB of tensors for 2 ranks \(model.n_layer" \
  "with allow_oversubscribe the allocation's failure names its size and the keys" -- \
  bash -c 'ulimit -v 4000000; exec "$@"' _ "$ndgraph" run "${big[@]}" --set runtime.allow_oversubscribe=true
fi
done_testing
