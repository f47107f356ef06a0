#!/usr/bin/env bash
# A mixed node's choice between its devices and the CPU workers alone
# (docs/scheduler.md, *Mixed nodes*) is made by the tuning pass and printed
# once, before the first step, with the two times it compared; never under
# strict placement, which holds each rank to its devices. Skipped without an
# OpenCL device.
# And the same bits run after run under runtime.deterministic (the default):
# a task may move between workers, never to another kind of device, whose
# kernels round differently (docs/scheduler.md, *Determinism*).
. "${ND_SRCDIR:-.}/tests/tap.sh"

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16
      --set train.micro_batch_size=2 --set parallelism.micro_batches=4 --set parallelism.pipeline_parallel_size=2
      --set train.steps=8 --set log.every=1 --set train.eval_every=0 --set train.save_dir= --set runtime.workers=1
      --set runtime.opencl_devices=1)

if ! grep -q "define ND_HAVE_OPENCL 1" "${ND_BUILDDIR:-.}/ndconfig.h"; then
  echo "ok 1 # SKIP this build has no OpenCL"
  echo "1..1"
  exit 0
fi
"$ndgraph" run "${tiny[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "OpenCL device" "$tmp/err"; then
  echo "ok 1 # SKIP no OpenCL device ($(head -c 200 "$tmp/err"))"
  echo "1..1"
  exit 0
fi
ok $rc "a pipeline on the CPU worker and the OpenCL device trains 8 steps"
line='^ndgraph: devices or CPU workers alone: best step [0-9]+\.[0-9] ms with all workers, [0-9]+\.[0-9] ms with the CPU workers alone -> (all workers|the CPU workers alone \(the devices stay idle\))$'
[ "$(grep -cE "$line" "$tmp/out")" -eq 1 ]
ok $? "the choice is printed once: $(grep -E "^ndgraph: devices" "$tmp/out")"
# the tuning pass runs before training: the first step line follows the choice
awk '/^ndgraph: devices/ {at = NR} /^step +1 \| loss/ {one = NR} END {exit !(at && one > at)}' "$tmp/out"
ok $? "it comes before step 1: the tuning pass runs before training"
# the faster side is the one kept (ties to the CPU workers)
awk '/^ndgraph: devices/ {all = $9; cpu = $14; kept = ($0 ~ /-> all workers$/); exit !(kept == (all + 0 < cpu + 0))}' \
  "$tmp/out"
ok $? "the side kept is the faster one"
"$ndgraph" run "${tiny[@]}" --set runtime.placement=strict >"$tmp/strict" 2>&1
ok $? "under strict placement it trains"
! grep -q "^ndgraph: devices" "$tmp/strict"
ok $? "under strict placement there is no trial to report"

# without the tuning pass every step runs on both kinds of worker: the
# same bits run after run, the thieves staying on their home's kind
for i in 1 2 3; do
  "$ndgraph" run "${tiny[@]}" --set runtime.tune=false --metrics "$tmp/u$i.jsonl" >"$tmp/untuned$i" 2>&1 ||
    echo "run $i failed" >>"$tmp/u$i.jsonl"
done
first=$(metric_losses "$tmp/u1.jsonl")
same=0
for i in 2 3; do [ -n "$first" ] && [ "$(metric_losses "$tmp/u$i.jsonl")" = "$first" ] || same=1; done
ok $same "three runs on the CPU worker and the device, affinity placement, ndws: the same losses bit for bit ($first)"
! grep -q "^ndgraph: devices" "$tmp/untuned1"
ok $? "runtime.tune=false: no trial to report"
# with it, the steps run on the side kept
for i in 1 2 3; do
  "$ndgraph" run "${tiny[@]}" --metrics "$tmp/m$i.jsonl" >"$tmp/run$i" 2>&1 || echo "run $i failed" >>"$tmp/m$i.jsonl"
done
choice() { grep -o -- '-> .*' "$1"; }
if [ "$(choice "$tmp/run1")" = "$(choice "$tmp/run2")" ] && [ "$(choice "$tmp/run1")" = "$(choice "$tmp/run3")" ]; then
  [ "$(metric_losses "$tmp/m1.jsonl")" = "$(metric_losses "$tmp/m2.jsonl")" ] && [ "$(metric_losses "$tmp/m1.jsonl")" = "$(metric_losses "$tmp/m3.jsonl")" ]
  ok $? "the same choice in the three runs ($(choice "$tmp/run1")): all 8 steps the same bits"
else
  echo "ok $((tap_n += 1)) # SKIP the runs chose differently: $(choice "$tmp/run1") / $(choice "$tmp/run2") / $(choice "$tmp/run3")"
fi
done_testing
