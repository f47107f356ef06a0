#!/usr/bin/env bash
# Mutation test of the suite: plants each bug below, one at a time, in a
# scratch copy of the committed tree (HEAD), runs `make check`, and reports
# whether the suite killed it (a test failed) or it survived.
#
#   scripts/mutants.sh [--list] [NAME...]     default: every mutant
#   MUTANTS_TESTS="tests/test_a tests/test_b" scripts/mutants.sh ...
#
# MUTANTS_TESTS runs those tests instead of the whole suite (`make check
# TESTS=...`): quicker on a busy machine; a kill stays a kill, a survivor
# then only says that those tests missed it.
#
# About 1.5 to 3 minutes per mutant on 2 cores. The copy is built once and
# checked unmutated first: a test that fails there does not count as a kill;
# each mutant rebuilds only what it touched. Prints a Markdown
# table (docs/reliability.md keeps the last one) and exits 1 when a mutant
# survived or could not be planted (its pattern no longer matches the code).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)

# name ~ file ~ sed expression ~ what it breaks
mutants=(
  "decay-all~kernels/cpu/backend.c~s/a->decay ? s->weight_decay : 0.0f/s->weight_decay/g~weight decay applied to every tensor (biases, LayerNorms)"
  "cosine-to-zero~train/trainer.c~s/double min_lr = lr \* 0.1;/double min_lr = 0.0;/~the cosine decays to 0, not to lr / 10"
  "data-one-later~train/trainer.c~s/s.seq_base = tr->steps_done \* tr->seqs_per_step;/s.seq_base = tr->steps_done * tr->seqs_per_step + 1;/~step s reads the sequences one position later"
  "allreduce-first-two~kernels/cpu/backend.c~s/nd_sum_ordered(CF(0), parts, a->nparts, a->n);/nd_sum_ordered(CF(0), parts, 2, a->n);/~the CPU all-reduce sums only the first two parts"
  "allreduce-reverse~kernels/cpu/backend.c~s/parts\[p\] = CF(p);/parts[p] = CF(p ? a->nparts - p : 0);/~the CPU all-reduce adds parts 1..n-1 in reverse rank order (the same sum, other bits)"
  "ndws-no-priority~scheduler/ndws.c~s/nd_queue_push(&w->q, task, task->priority,/nd_queue_push(\&w->q, task, 0,/~ndws ignores priorities"
  "adamw-bias-correction~kernels/cpu/adamw.c~s/pow(beta2, t)/pow(beta2, t + 1)/~AdamW's second-moment bias correction off by one step"
  "gelu-constant~kernels/cpu/gelu.c~s/#define ND_GELU_A 0.044715f/#define ND_GELU_A 0.045f/~GeLU's cubic coefficient 0.045"
  "layernorm-eps~kernels/cpu/layernorm.c~s/#define ND_LN_EPS 1e-5f/#define ND_LN_EPS 1e-4f/~LayerNorm epsilon 1e-4"
  "st-offsets-unchecked~checkpoint/safetensors.c~s/e->begin > e->end || e->end > data_len/e->begin > e->end/~safetensors data_offsets past the file accepted"
  "latest-incomplete~checkpoint/checkpoint.c~s/if (is_complete(dir)) best = step;/if (is_complete(dir) || 1) best = step;/~the newest checkpoint chosen without checking it is complete"
  "config-heads-tp~configs/validate.c~s/if (head % tp)/if (0)/~n_head not divisible by tensor_parallel_size accepted"
  "placement-blocks~placement/placement.c~s/zigzag = tp == 1 \&\& per_replica > 0;/zigzag = 0;/~stages that share units share them in blocks, not in V order"
  "chain-across-layers~tasks/chain.c~s/a->micro_batch == b->micro_batch \&\& a->layer == b->layer \&\&/a->micro_batch == b->micro_batch \&\&/~a chain runs on into the next layer's tasks"
  "auto-no-restart~train/trainer.c~s/rc = tr->steps_done ? nd__trainer_restart(tr, err) : 0;/rc = 0;/~stage_layers auto keeps the even split without restarting from step 0"
  "token-range-edge~data/dataset.c~s/(int64_t)largest_id(p, w, n) < ds->vocab_size/(int64_t)largest_id(p, w, n) <= ds->vocab_size/~a token id equal to vocab_size accepted, at open and at each read"
  "bad-data-step-applied~tasks/codelets.c~s/nd_dataset_failed(c->step->data)) return;/nd_dataset_failed(c->step->data) \&\& 0) return;/~a step whose data could not be read is applied"
  "no-save-dir-lock~train/trainer.c~s/rc = nd_checkpoint_lock(dir, \&tr->save_lock, err);/rc = 0;/~two runs write the same save_dir"
)

if [ "${1:-}" = --list ]; then
  for m in "${mutants[@]}"; do IFS='~' read -r name file _ what <<<"$m"; printf '%-22s %-26s %s\n' "$name" "$file" "$what"; done
  exit 0
fi
selected=("$@")

scratch=$(mktemp -d /tmp/nd-mutants-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
git -C "$top" archive HEAD | tar -x -C "$scratch"
cd "$scratch" || exit 2
export STARPU_HOME=${STARPU_HOME:-$scratch/.starpu}
log=$scratch/mutants.log
echo "scratch copy of $(git -C "$top" rev-parse --short HEAD) in $scratch" >&2
if ! { ./autogen.sh && ./configure --enable-werror && make -j2; } >"$log" 2>&1; then
  echo "mutants.sh: the unmutated tree does not build (see $log)" >&2; trap - EXIT; exit 2
fi
# Tests that fail unmutated (a defect not fixed yet) do not count as kills.
# Every test runs each time: automake would not rerun a test whose log is
# newer than its program, and a libtool wrapper is not relinked.
check() {
  rm -f test-suite.log tests/*.log tests/*.trs
  if [ -n "${MUTANTS_TESTS:-}" ]; then make -j2 check TESTS="$MUTANTS_TESTS" >"$log" 2>&1
  else make -j2 check >"$log" 2>&1; fi
}
failed_tests() { grep -E '^(FAIL|ERROR):' "$1" | awk '{ print $2 }' | sort -u; }
check
failed_tests "$log" >"$scratch/baseline"
grep -q '^# PASS: *[1-9]' "$log" || { echo "mutants.sh: make check ran no test (see $log)" >&2; trap - EXIT; exit 2; }
if [ -s "$scratch/baseline" ]; then
  echo "mutants.sh: unmutated, these fail already and are not counted: $(tr '\n' ' ' <"$scratch/baseline")" >&2
fi

rows=() survivors=0
for m in "${mutants[@]}"; do
  IFS='~' read -r name file expr what <<<"$m"
  if [ ${#selected[@]} -gt 0 ] && ! printf '%s\n' "${selected[@]}" | grep -qx "$name"; then continue; fi
  cp "$file" "$scratch/orig"
  sed -i "$expr" "$file"
  start=$SECONDS
  if cmp -s "$file" "$scratch/orig"; then
    result="NOT PLANTED (pattern not found)" failing="" survivors=$((survivors + 1))
  elif ! make -j2 >"$log" 2>&1; then
    result="does not build" failing=""
  else
    check
    failing=$(failed_tests "$log" | comm -23 - "$scratch/baseline" | tr '\n' ' ')
    if ! grep -q '^# TOTAL:' "$log"; then result="killed (make check did not finish)"
    elif [ -n "$failing" ]; then result="killed"
    else result="**survived**" survivors=$((survivors + 1)); fi
  fi
  cp "$scratch/orig" "$file"
  touch "$file"
  echo "$name: $result ($((SECONDS - start)) s) $failing" >&2
  rows+=("| $name | $what | \`$file\` | $result | ${failing:-–} |")
done
make -j2 >/dev/null 2>&1

echo "| mutant | planted bug | file | result | failing tests |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
[ "$survivors" -eq 0 ]
