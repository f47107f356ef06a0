#!/usr/bin/env bash
# One process failing under mpirun (docs/nodes.md, "When a process fails"):
# whatever fails on one process only (an output file, its data, its
# checkpoint, a --resume only it was given), the job ends within 10 s, every
# process exits with the same non-zero status by itself, and one line names
# the process and the cause. A failure of every process alike (a layout) is
# said once, as in one process. Processes reading different data under the
# same path, or resuming from different checkpoints, are refused.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
ndgraph=$(cd "$(dirname "$ndgraph")" && pwd)/$(basename "$ndgraph")
cfg=$(cd "$srcdir" && pwd)/configs/quickstart.yaml
run=("$ndgraph" run "$cfg" --set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16
  --set train.steps=3 --set log.every=1 --set train.save_dir= --set train.eval_every=0 --set train.warmup_steps=1
  --set parallelism.micro_batches=2 --set parallelism.activation_slots=2 --set runtime.workers=1
  --set parallelism.data_parallel_size=2 --set parallelism.pipeline_parallel_size=1)
# each process writes its own exit status to $tmp/status.RANK; mpirun lets
# every process end by itself (by default it kills the others once one
# exits non-zero), so that each status is the process's own
wrap=(sh -c '"$@"; st=$?; echo $st >"$0.$OMPI_COMM_WORLD_RANK"; exit $st' "$tmp/status")
mkdir -p "$tmp/a" "$tmp/b"

# job NAME PATTERN -- mpirun arguments: the job ends within 10 s (bounded at
# 30), both processes exit with the same non-zero status, and stderr holds
# exactly one line of ndgraph's, matching PATTERN, and no abort
job() {
  local name=$1 pattern=$2 start elapsed st0 st1 lines
  shift 3
  rm -f "$tmp"/status.*
  start=$(date +%s.%N)
  timeout -k 5 30 "${mpirun[@]}" --mca orte_abort_on_non_zero_status 0 "$@" >"$tmp/out" 2>"$tmp/err"
  elapsed=$(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}')
  st0=$(cat "$tmp/status.0" 2>/dev/null) st1=$(cat "$tmp/status.1" 2>/dev/null)
  lines=$(grep -c '^ndgraph: ' "$tmp/err")
  [ -n "$st0" ] && [ "$st0" != 0 ] && [ "$st0" = "$st1" ] && [ "$lines" -eq 1 ] &&
    grep -qE -- "$pattern" "$tmp/err" && ! grep -q MPI_ABORT "$tmp/err" &&
    awk -v t="$elapsed" 'BEGIN {exit !(t < 10)}'
  ok $? "$name: exit ${st0:-none} / ${st1:-none} after $elapsed s, $lines line"
  grep '^ndgraph: ' "$tmp/err" | head -3 | sed 's/^/# /'
}

# outputs only process 0 writes
job "--metrics /dev/full" '^ndgraph: process 0: /dev/full: cannot write the metrics file' -- \
  -np 2 "${wrap[@]}" "${run[@]}" --metrics /dev/full
job "--trace /dev/full" '^ndgraph: process 0: /dev/full: cannot write' -- \
  -np 2 "${wrap[@]}" "${run[@]}" --trace /dev/full
# a checkpoint that process 0 cannot write (a full disk: its files limited to 64 KiB)
full=(bash -c 'ulimit -f 64; trap "" XFSZ; exec "$0" "$@"')
job "a checkpoint write failing on process 0" '^ndgraph: process 0: .*/ck/step-2/.*File too large' -- \
  -np 1 "${wrap[@]}" "${full[@]}" "${run[@]}" --set train.save_dir="$tmp/ck" --set train.save_every=2 : \
  -np 1 "${wrap[@]}" "${run[@]}" --set train.save_dir="$tmp/ck" --set train.save_every=2

# the same relative paths, another directory per process (node-local disks)
two() { # two ARGS...: in $apps, process 0 in $tmp/a and process 1 in $tmp/b running the same command
  apps=(-np 1 -wdir "$tmp/a" "${wrap[@]}" "${run[@]}" "$@" : -np 1 -wdir "$tmp/b" "${wrap[@]}" "${run[@]}" "$@")
}
data=(--set data.train=train.bin --set data.val=train.bin --set data.format=tokens-u16)
python3 - "$tmp" <<'PY'
import random, struct, sys
random.seed(1)
tokens = [random.randrange(256) for _ in range(50000)]
good = struct.pack(f"<{len(tokens)}H", *tokens)
open(f"{sys.argv[1]}/a/train.bin", "wb").write(good)
open(f"{sys.argv[1]}/bad.bin", "wb").write(good[:2000] + struct.pack("<H", 300) + good[2002:])
# the same size, one token changed past the first 64 KiB: within the last
changed = bytearray(good)
changed[-10] ^= 1
open(f"{sys.argv[1]}/changed.bin", "wb").write(bytes(changed))
PY
two "${data[@]}"
job "the data file missing on process 1" '^ndgraph: process 1: train.bin: cannot open' -- "${apps[@]}"
cp "$tmp/bad.bin" "$tmp/b/train.bin"
job "a bad token in process 1's data" '^ndgraph: process 1: train.bin: .*300' -- "${apps[@]}"
cp "$tmp/changed.bin" "$tmp/b/train.bin"
job "process 1 reads other data under the same path" \
  '^ndgraph: process 1: train.bin: data.train is not the file process 0 reads' -- "${apps[@]}"

# checkpoints: one of 2 steps in process 0's directory
cp "$tmp/a/train.bin" "$tmp/b/train.bin"
"$ndgraph" run "$cfg" "${run[@]:3}" "${data[@]/train.bin/$tmp/a/train.bin}" --set parallelism.data_parallel_size=1 \
  --set train.steps=2 --set train.save_dir="$tmp/a/ck" >/dev/null 2>&1
[ -f "$tmp/a/ck/step-2/state.json" ]
ok $? "a checkpoint to resume from (one process)"
job "--resume given to process 0 only" '^ndgraph: process 1: no checkpoint resumed, but process 0 resumed at step 2' -- \
  -np 1 -wdir "$tmp/a" "${wrap[@]}" "${run[@]}" "${data[@]}" --resume ck : \
  -np 1 -wdir "$tmp/b" "${wrap[@]}" "${run[@]}" "${data[@]}"
two "${data[@]}" --resume ck
job "a resume directory only process 0 sees" '^ndgraph: process 1: ck: cannot open directory' -- "${apps[@]}"
# process 1's directory holds another checkpoint of the same step
cp -r "$tmp/a/ck" "$tmp/b/ck"
printf '{"step": 2, "data_position": 64, "adam_t": 1, "data": "train.bin"}' >"$tmp/b/ck/step-2/state.json"
job "process 1 resumes from another checkpoint under the same path" \
  '^ndgraph: process 1: ck/step-2: not the checkpoint process 0 resumed from' -- "${apps[@]}"

# a failure of every process alike: said once, as in one process
job "a layout error on every process" '^ndgraph: mpirun: 2 processes, but data_parallel_size 1' -- \
  -np 2 "${wrap[@]}" "${run[@]}" --set parallelism.data_parallel_size=1

# mpirun's own status, left at its default: non-zero, within 10 s
start=$(date +%s)
timeout -k 5 30 "${mpirun[@]}" -np 2 "${run[@]}" --metrics /dev/full >"$tmp/out" 2>"$tmp/err"
st=$?
elapsed=$(($(date +%s) - start))
[ $st -ne 0 ] && [ $st -ne 124 ] && [ $elapsed -lt 10 ] && [ "$(grep -c '^ndgraph: ' "$tmp/err")" -eq 1 ]
ok $? "mpirun with its defaults: the job exits $st after $elapsed s, one line"

done_testing
