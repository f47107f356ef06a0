#!/usr/bin/env bash
# kill -9 during checkpointing, at random moments, and what is left:
#
#   scripts/kill-test.sh [TRIALS]         default 20
#
# Each trial starts a tiny model that writes a checkpoint after every step
# into a fresh save directory, kills it with SIGKILL at a random moment 0 to
# 2 s after its first checkpoint (mostly inside a checkpoint write, which
# dominates a step of this model), then checks:
#   - every step-N directory is complete (the four files, none empty), and
#     the three newest load: `ndgraph eval --checkpoint` succeeds;
#   - `ndgraph run --resume SAVE_DIR` starts from the newest complete one
#     ("resumed from .../step-N at step N") and exits 0;
#   - after that next start, no temporary (.step-*.tmp-*) is left.
# Prints one line per trial and a summary; exits 1 when a checkpoint was
# corrupt, a resume failed, a temporary was left or a run wrote no
# checkpoint; 2 on bad usage.
# NDGRAPH (default: ./ndgraph of the build) is the binary under test.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
trials=${1:-20}
case $trials in '' | *[!0-9]*) echo "kill-test.sh: TRIALS must be a number, got '$trials'" >&2; exit 2 ;; esac
ndgraph=${NDGRAPH:-${ND_BUILDDIR:-$top}/ndgraph}
[ -x "$ndgraph" ] || { echo "kill-test.sh: $ndgraph: not built" >&2; exit 2; }
work=$(mktemp -d /tmp/nd-kill-test-XXXXXX)
trap 'rm -rf "$work"' EXIT

tiny=(--set model.n_layer=1 --set model.n_embd=16 --set model.n_head=2 --set model.seq_len=8
      --set parallelism.pipeline_parallel_size=1 --set parallelism.micro_batches=1 --set parallelism.activation_slots=1
      --set train.micro_batch_size=2 --set train.eval_every=0 --set train.save_every=1 --set log.every=1000
      --set runtime.workers=2)

checkpoints=0 corrupt=0 resumes=0 failed=0 leftover=0 empty=0
for ((trial = 1; trial <= trials; trial++)); do
  save=$work/run-$trial
  delay=$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 2 * rand() }')
  "$ndgraph" run "${tiny[@]}" --set train.steps=1000000 --set train.save_dir="$save" >/dev/null 2>&1 &
  pid=$!
  # the random moment counts from the first checkpoint: a busy machine may take seconds to start
  tries=0
  while [ $tries -lt 1200 ] && [ ! -d "$save/step-1" ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    tries=$((tries + 1))
  done
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  tmps_before=$(find "$save" -maxdepth 1 -name '.step-*' 2>/dev/null | wc -l)

  # every visible checkpoint complete; the newest three load
  newest=-1 bad=0 n=0
  for dir in "$save"/step-*; do
    [ -d "$dir" ] || continue
    n=$((n + 1))
    step=${dir##*/step-}
    for f in model.safetensors optimizer.safetensors config.json state.json; do
      [ -s "$dir/$f" ] || { bad=$((bad + 1)); echo "  $dir: $f missing or empty"; continue 2; }
    done
    [ "$step" -gt "$newest" ] && newest=$step
  done
  for dir in $(ls -d "$save"/step-* 2>/dev/null | sort -t- -k2 -n | tail -3); do
    if ! "$ndgraph" eval "${tiny[@]}" --checkpoint "$dir" --batches 1 >/dev/null 2>"$work/err"; then
      bad=$((bad + 1))
      echo "  $dir does not load: $(head -c 300 "$work/err")"
    fi
  done
  checkpoints=$((checkpoints + n)) corrupt=$((corrupt + bad))
  if [ "$newest" -lt 0 ]; then
    empty=$((empty + 1))
    echo "trial $trial: no checkpoint written (did the run start?)"
    rm -rf "$save"
    continue
  fi

  # the next start resumes from the newest and cleans the temporaries
  resumes=$((resumes + 1))
  out=$("$ndgraph" run "${tiny[@]}" --set train.steps=$((newest + 1)) --set train.save_dir="$save" \
    --resume "$save" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q "resumed from $save/step-$newest at step $newest\$" <<<"$out"; then
    failed=$((failed + 1))
    echo "  resume failed (exit $rc, newest step-$newest): $(head -c 300 <<<"$out")"
  fi
  tmps_after=$(find "$save" -maxdepth 1 -name '.step-*.tmp-*' | wc -l)
  leftover=$((leftover + tmps_after))
  echo "trial $trial: killed ${delay}s after the first checkpoint: $n checkpoints (newest step-$newest), $bad corrupt," \
    "$tmps_before temporaries, $tmps_after left after the next start, resume exit $rc"
  rm -rf "$save"
done
echo "summary: $trials trials ($empty without a checkpoint), $checkpoints checkpoints seen," \
  "$corrupt corrupt, $failed of $resumes resumes failed, $leftover temporaries left after the next start"
[ "$corrupt" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$leftover" -eq 0 ] && [ "$empty" -eq 0 ]
