#!/usr/bin/env bash
# Stopping under a batch scheduler keeps the work (docs/nodes.md, *Stopping
# under a batch scheduler*): mpirun (Open MPI 4.1) passes SIGTERM on
# odls_base_sigkill_timeout seconds after it got it, and kills the processes
# as long again after that (1 s by default). A run says at its start how long that is and what sets it; the
# first checkpoint that takes longer draws one warning naming the setting and
# a value; and with the setting the docs name, SIGTERM to mpirun leaves a
# complete checkpoint of tens of MB that resumes.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg=$(cd "$srcdir" && pwd)/configs/quickstart.yaml
# a wide vocabulary: the checkpoint (weights and Adam's moments) is about 50 MB
run=("$ndgraph" run "$cfg" --set model.n_layer=1 --set model.n_embd=64 --set model.n_head=2 --set model.seq_len=16
  --set model.vocab_size=65536
  --set train.eval_every=0 --set log.every=1 --set parallelism.micro_batches=1 --set train.micro_batch_size=2
  --set runtime.workers=1 --set parallelism.data_parallel_size=2 --set parallelism.pipeline_parallel_size=1
  --set train.save_every=0)

# a grace of 0 s: the first checkpoint is longer; one warning, with the setting and a value
OMPI_MCA_odls_base_sigkill_timeout=0 "${mpirun[@]}" -np 2 "${run[@]}" --set train.steps=2 --set train.save_every=1 \
  --set train.save_dir="$tmp/warn" >"$tmp/warn.out" 2>"$tmp/warn.err"
st=$?
grep -q '^mpirun: after SIGTERM the processes have 0 s to write their checkpoint (about [0-9]* MB) before they are killed; OMPI_MCA_odls_base_sigkill_timeout sets it$' "$tmp/warn.out"
ok $? "the start names the grace and its setting (exit $st): $(grep '^mpirun: after' "$tmp/warn.out")"
[ "$(grep -c '^ndgraph: warning: the checkpoint of step 1 took .* set OMPI_MCA_odls_base_sigkill_timeout to [0-9]* or more' "$tmp/warn.err")" -eq 1 ] &&
  ! grep -q 'checkpoint of step 2' "$tmp/warn.err"
ok $? "one warning, at the first checkpoint longer than the grace: $(grep -m1 'warning: the checkpoint' "$tmp/warn.err")"

# the setting the docs give: SIGTERM to mpirun leaves a complete checkpoint that resumes
OMPI_MCA_odls_base_sigkill_timeout=8 "${mpirun[@]}" -np 2 "${run[@]}" --set train.steps=100000 \
  --set train.save_dir="$tmp/stop" >"$tmp/stop.out" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q '^step  *2 ' "$tmp/stop.out" && break; sleep 0.1; done
kill -TERM $job
wait_or_kill $job 600
n=$(sed -n 's/^ndgraph: SIGTERM after step \([0-9]*\): checkpoint .*; stopping$/\1/p' "$tmp/stop.out")
bytes=$(cat "$tmp/stop/step-$n/"*.safetensors 2>/dev/null | wc -c)
[ -n "$n" ] && [ -f "$tmp/stop/step-$n/state.json" ] && [ "$bytes" -gt 40000000 ] && ! ls -a "$tmp/stop" | grep -q '\.tmp'
ok $? "SIGTERM to mpirun with OMPI_MCA_odls_base_sigkill_timeout=8: a complete step-${n:-?} of $bytes bytes, no temporary"
"$ndgraph" run "$cfg" "${run[@]:3}" --set train.steps=$((${n:-0} + 1)) \
  --set train.save_dir="$tmp/stop" --resume "$tmp/stop" >"$tmp/resume.out" 2>&1
st=$?
[ $st -eq 0 ] && grep -q "^resumed from .*step-$n at step $n" "$tmp/resume.out"
ok $? "it resumes, on one process (exit $st): $(grep -m1 '^resumed' "$tmp/resume.out")"
done_testing
