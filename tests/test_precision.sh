#!/usr/bin/env bash
# train.precision: bf16 trains the quick start within 2% of fp32's losses over
# 20 steps (and is in effect: the losses are not fp32's), its plan shows the
# weights' casts, runtime.tf32 is its tf32 alias with a note, and bad values
# are one line and exit 2.
. "${ND_SRCDIR:-.}/tests/tap.sh"

run20=(--set train.steps=20 --set train.eval_every=0 --set train.save_dir= --set log.every=1)
for p in fp32 bf16; do
  "$ndgraph" run "$srcdir/configs/quickstart.yaml" "${run20[@]}" --set train.precision=$p --metrics "$tmp/$p.jsonl" \
    >"$tmp/$p.out" 2>&1
  ok $? "the quick start trains 20 steps in $p"
done
python3 - "$tmp/fp32.jsonl" "$tmp/bf16.jsonl" <<'PY'
import json, sys
fp32, bf16 = ([json.loads(l)["loss"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:])
worst = max(abs(b - f) / f for f, b in zip(fp32, bf16))
print(f"# bf16 against fp32 over {len(fp32)} steps: worst relative difference {worst:.2e}")
sys.exit(0 if len(fp32) == len(bf16) == 20 and 0 < worst < 0.02 else 1)
PY
ok $? "bf16's 20 losses are within 2% of fp32's, and not fp32's"

for p in fp32 bf16; do
  "$ndgraph" plan "$srcdir/configs/quickstart.yaml" --set train.precision=$p --json >"$tmp/plan-$p.json" 2>"$tmp/err"
done
python3 - "$tmp/plan-fp32.json" "$tmp/plan-bf16.json" <<'PY'
import json, sys
fp32, bf16 = (json.load(open(p)) for p in sys.argv[1:])
casts = bf16["tasks_per_kind"].get("cast_bf16", 0)
copies = sum(r["param_copy_bytes"] for r in bf16["ranks"])
act = [sum(r["activation_bytes"] for r in p["ranks"]) for p in (fp32, bf16)]
print(f"# {casts} cast_bf16 tasks, {copies} bytes of bf16 weight copies; activations {act[0]} -> {act[1]} bytes")
sys.exit(0 if casts > 0 and copies > 0 and act[1] < act[0] else 1)
PY
ok $? "the bf16 plan has cast_bf16 tasks, bf16 weight copies and fewer activation bytes (GEMM inputs in bf16)"

"$ndgraph" plan "$srcdir/configs/quickstart.yaml" --set runtime.tf32=true >/dev/null 2>"$tmp/err"
[ $? -eq 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "runtime.tf32 is an alias of train.precision: tf32" "$tmp/err"
ok $? "runtime.tf32: true is accepted with a one-line note"
expect 2 "train.precision: expected one of: fp32, tf32, bf16; got 'fp16'" "a bad precision is refused" -- \
  "$ndgraph" plan "$srcdir/configs/quickstart.yaml" --set train.precision=fp16
expect 2 "train.precision: bf16 disagrees with runtime.tf32: true" "the alias disagreeing with bf16 is refused" -- \
  "$ndgraph" plan "$srcdir/configs/quickstart.yaml" --set runtime.tf32=true --set train.precision=bf16
done_testing
