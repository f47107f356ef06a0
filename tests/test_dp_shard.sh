#!/usr/bin/env bash
# Sharded data parallelism (parallelism.data_parallel_shard): each option
# trains to the losses and gradient norms of `none` bit for bit, on GPT-2 and
# Llama, whole groups and HSDP groups, with tensor and pipeline ranks and
# ranks that hold no range of small tensors; the final checkpoints are the same
# bytes, and a run resumed under a shard option continues as one that never
# stopped; `plan` shows the optimizer state and the summed gradients cut by
# the group size, the gradient buffers transient (a pool of two blocks' with
# one micro-batch a step); bad values
# are one-line errors with exit status 2; the measured tensors of a rank follow
# the plan's memory table under each option.
. "${ND_SRCDIR:-.}/tests/tap.sh"

cfg="$srcdir/configs/quickstart.yaml"
# dp 4 on one stage, 2 micro-batches; n_embd 64 keeps every tensor over 8
# elements a rank; the issue's 8 layers of n_embd 256 are the plan case
small=(--set model.n_layer=2 --set model.n_embd=64 --set model.n_head=2 --set model.seq_len=32
  --set parallelism.pipeline_parallel_size=1 --set parallelism.data_parallel_size=4
  --set parallelism.micro_batches=2 --set train.micro_batch_size=2 --set train.steps=10 --set log.every=1
  --set train.eval_every=0 --set train.warmup_steps=2 --set train.save_every=5 --set runtime.workers=2)
llama=(--set model.n_kv_head=1)


# run NAME [llama] ARGS...: 10 steps of the quick start (or llama-tiny), metrics in $tmp/NAME.jsonl,
# checkpoints of steps 5 and 10 in $tmp/NAME
run() {
  local name=$1 config=$cfg; shift
  [ "$1" = llama ] && config="$srcdir/configs/llama-tiny.yaml" && shift
  "$ndgraph" run "$config" "${small[@]}" "$@" --set train.save_dir="$tmp/$name" --metrics "$tmp/$name.jsonl" \
    >"$tmp/$name.out" 2>&1
  local st=$?
  [ $st -eq 0 ] || sed 's/^/# /' "$tmp/$name.out" | tail -3
  return $st
}

# same_run NAME REF WHAT: NAME's losses, norms and final checkpoint are REF's
same_run() {
  same "$tmp/$2.jsonl" "$tmp/$1.jsonl"
  ok $? "$3: the 10 losses and gradient norms of $2, bit for bit"
  for file in model.safetensors optimizer.safetensors; do
    cmp -s "$tmp/$2/step-10/$file" "$tmp/$1/step-10/$file"
    ok $? "$3: step-10/$file byte for byte as $2's"
  done
}

run none
ok $? "GPT-2 dp 4, shard none: 10 steps"
diag "none: $(metric_losses "$tmp/none.jsonl")"
for option in optimizer gradients parameters; do
  run $option --set parallelism.data_parallel_shard=$option
  ok $? "GPT-2 dp 4, shard $option: 10 steps"
  same_run $option none "GPT-2 dp 4, $option"
  run hsdp-$option --set parallelism.data_parallel_shard=$option --set parallelism.data_parallel_shard_size=2
  ok $? "GPT-2 dp 4, shard $option in groups of 2 (HSDP): 10 steps"
  same_run hsdp-$option none "GPT-2 dp 4, $option in groups of 2"
done

# measured against planned: a rank's tensors as the run allocated them (its
# step lines' rank_tensor_bytes_peak, the rank that holds the most) are the
# plan's memory table for that rank within 10%, under every option
for option in none optimizer gradients parameters; do
  "$ndgraph" plan "$cfg" "${small[@]}" --set parallelism.data_parallel_shard=$option --json \
    >"$tmp/plan-small-$option.json" 2>"$tmp/plan-small.err"
  python3 - "$tmp/plan-small-$option.json" "$tmp/$option.jsonl" <<'PY'
import json, sys
plan, steps = json.load(open(sys.argv[1])), [json.loads(l) for l in open(sys.argv[2])]
kinds = ("param_bytes", "param_copy_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes", "input_bytes",
         "transient_bytes")
planned = max(sum(r[k] for k in kinds) for r in plan["ranks"])
measured = max(l["rank_tensor_bytes_peak"] for l in steps if "rank_tensor_bytes_peak" in l)
print(f"# planned {planned} bytes on the fullest rank, measured {measured}: {measured / planned:.3f}")
sys.exit(0 if abs(measured - planned) <= 0.1 * planned else 1)
PY
  ok $? "GPT-2 dp 4, shard $option: the measured tensors of the fullest rank within 10% of the plan's"
done

run llama-none llama "${llama[@]}"
ok $? "Llama dp 4, shard none: 10 steps"
run llama-gradients llama "${llama[@]}" --set parallelism.data_parallel_shard=gradients
ok $? "Llama dp 4, shard gradients: 10 steps"
same_run llama-gradients llama-none "Llama dp 4, gradients"
run llama-parameters llama "${llama[@]}" --set parallelism.data_parallel_shard=parameters
ok $? "Llama dp 4, shard parameters: 10 steps"
same_run llama-parameters llama-none "Llama dp 4, parameters"
# one micro-batch a step: four blocks share a pool of two gradient buffers
# per weight, each reduce-scattered before the block after next writes it
one=(--set parallelism.micro_batches=1 --set model.n_layer=4)
run one-none "${one[@]}"
ok $? "GPT-2 dp 4, 4 layers, one micro-batch, shard none: 10 steps"
for option in gradients parameters; do
  run one-$option "${one[@]}" --set parallelism.data_parallel_shard=$option
  ok $? "GPT-2 dp 4, 4 layers, one micro-batch, shard $option: 10 steps"
  same_run one-$option one-none "GPT-2 dp 4, one micro-batch (gradient buffers reused), $option"
done
# parameters with recomputed blocks: the gathers come before each block's recomputation
run recompute-parameters --set parallelism.data_parallel_shard=parameters --set train.recompute=layer
ok $? "GPT-2 dp 4, shard parameters with train.recompute layer: 10 steps"
same_run recompute-parameters none "GPT-2 dp 4, parameters with recompute layer"

# dp 4 x tp 2 x pp 2 at n_embd 16: the tied embedding's two stages, norms
# repeated on the tensor ranks, and tensors of 8 elements a tensor rank, so
# that ranks 2 and 3 of a group hold no range of them
mesh=(--set model.n_embd=16 --set parallelism.pipeline_parallel_size=2 --set parallelism.tensor_parallel_size=2)
for option in none optimizer gradients parameters; do
  run mesh-$option "${mesh[@]}" --set parallelism.data_parallel_shard=$option
  ok $? "GPT-2 dp 4 x tp 2 x pp 2, n_embd 16, shard $option: 10 steps"
done
for option in optimizer gradients parameters; do same_run mesh-$option mesh-none "dp 4 x tp 2 x pp 2 with empty ranges, $option"; done

# resume: the checkpoint of step 5 of one option, 5 more steps under the other
for pair in "none optimizer" "optimizer gradients" "gradients parameters" "parameters none"; do
  set -- $pair
  "$ndgraph" run "$cfg" "${small[@]}" --set parallelism.data_parallel_shard=$2 --resume "$tmp/$1/step-5" \
    --set train.save_dir="$tmp/resumed-$1" --metrics "$tmp/resumed-$1.jsonl" >"$tmp/resumed-$1.out" 2>&1
  ok $? "step-5 of $1 resumed under $2 to step 10"
  python3 - "$tmp/none.jsonl" "$tmp/resumed-$1.jsonl" <<'PY'
import json, sys
a, b = ([(l["step"], l["loss"], l["grad_norm"]) for l in map(json.loads, open(p)) if "loss" in l and l["step"] > 5]
        for p in sys.argv[1:3])
sys.exit(0 if a == b and len(a) == 5 else 1)
PY
  ok $? "step-5 of $1 resumed under $2: steps 6-10 give the losses and norms of the run that never stopped"
  cmp -s "$tmp/none/step-10/optimizer.safetensors" "$tmp/resumed-$1/step-10/optimizer.safetensors"
  ok $? "step-5 of $1 resumed under $2: step-10/optimizer.safetensors byte for byte as the unbroken run's"
done

# plan: the issue's GPT-2, 8 layers of n_embd 256, dp 4
issue=(--set model.n_layer=8 --set model.n_embd=256 --set parallelism.pipeline_parallel_size=1
  --set parallelism.data_parallel_size=4)
"$ndgraph" plan "$cfg" "${issue[@]}" --json >"$tmp/plan-none.json" 2>"$tmp/plan.err" &&
  "$ndgraph" plan "$cfg" "${issue[@]}" --set parallelism.data_parallel_shard=gradients --json \
    >"$tmp/plan-gradients.json" 2>>"$tmp/plan.err"
ok $? "plan --json of the issue's GPT-2 (8 layers, n_embd 256, dp 4), none and gradients"
python3 - "$tmp/plan-none.json" "$tmp/plan-gradients.json" <<'PY'
import json, sys
none, opt = (json.load(open(p)) for p in sys.argv[1:3])
ok = opt["layout"]["data_parallel_shard"] == "gradients" and opt["layout"]["data_parallel_shard_size"] == 4
for a, b in zip(none["ranks"], opt["ranks"]):
    quarter = a["optimizer_bytes"] / 4
    # each of the 100 tensors' ranges rounds to 8 elements: 2 moments x 8 floats a tensor off a quarter
    slack = 100 * 2 * 8 * 4
    print(f"# rank dp {b['dp']}: optimizer {b['optimizer_bytes']} bytes, a quarter of none's {quarter:.0f}")
    ok &= abs(b["optimizer_bytes"] - quarter) <= slack
    # the summed gradients' ranges, each padded to its 8-element chunk
    print(f"# rank dp {b['dp']}: gradient ranges {b['grad_bytes']} bytes, buffers {b['transient_bytes']}")
    ok &= abs(b["grad_bytes"] - a["grad_bytes"] / 4) <= 100 * 8 * 4
    # 4 micro-batches: every gradient's buffer lives until the step's last backward
    ok &= b["param_bytes"] == a["param_bytes"] and b["transient_bytes"] == a["grad_bytes"]
sys.exit(0 if ok else 1)
PY
ok $? "plan: optimizer state and summed gradients per rank a quarter of none's (each tensor's range rounded to 8 elements), parameters unchanged, whole gradient buffers transient"

"$ndgraph" plan "$cfg" "${issue[@]}" --set parallelism.data_parallel_shard=parameters --json \
  >"$tmp/plan-parameters.json" 2>>"$tmp/plan.err"
ok $? "plan --json of the issue's GPT-2 under parameters"
python3 - "$tmp/plan-none.json" "$tmp/plan-parameters.json" <<'PY'
import json, sys
none, par = (json.load(open(p)) for p in sys.argv[1:3])
ok = par["layout"]["data_parallel_shard"] == "parameters"
total = lambda r: r["param_bytes"] + r["grad_bytes"] + r["optimizer_bytes"]
for a, b in zip(none["ranks"], par["ranks"]):
    print(f"# rank dp {b['dp']}: params {b['param_bytes']} of {a['param_bytes']}, transient {b['transient_bytes']}, "
          f"params + grads + optimizer {total(b) / total(a):.3f} of none's")
    # the blocks' weights a quarter, the embedding and final norm whole; the
    # gathered weights and the gradient buffers transient
    ok &= b["param_bytes"] < 0.3 * a["param_bytes"] and total(b) <= 0.3 * total(a) and b["transient_bytes"] > 0
    ok &= a["transient_bytes"] == 0
sys.exit(0 if ok else 1)
PY
ok $? "plan under parameters: the weights kept per rank under 0.3 of none's, params + grads + optimizer at most 0.30 of none's"

# one micro-batch a step: the gradient buffers are a pool of two blocks'
for option in none gradients parameters; do
  "$ndgraph" plan "$cfg" "${issue[@]}" --set parallelism.micro_batches=1 --set parallelism.data_parallel_shard=$option \
    --json >"$tmp/plan-one-$option.json" 2>>"$tmp/plan.err"
done
python3 - "$tmp/plan-one-none.json" "$tmp/plan-one-gradients.json" "$tmp/plan-one-parameters.json" <<'PY'
import json, sys
none, grad, par = (json.load(open(p)) for p in sys.argv[1:4])
ok = True
for a, b, c in zip(none["ranks"], grad["ranks"], par["ranks"]):
    print(f"# rank dp {b['dp']}: gradient buffers {b['transient_bytes']} of none's gradients {a['grad_bytes']}; "
          f"parameters' transient {c['transient_bytes']} (gathered weights too)")
    # two of the 8 blocks' gradients, the embeddings' and final norm's
    ok &= 0 < b["transient_bytes"] < 0.3 * a["grad_bytes"]
    ok &= c["transient_bytes"] < 0.3 * (a["grad_bytes"] + a["param_bytes"])
sys.exit(0 if ok else 1)
PY
ok $? "plan with one micro-batch a step: the gradient buffers under gradients and parameters are two blocks' (under 0.3 of none's gradients)"

# bad values: one line, exit 2
expect 2 'data_parallel_shard_size \(3\) must divide parallelism.data_parallel_size \(4\)' \
  "shard size 3 with dp 4: refused" -- "$ndgraph" plan "$cfg" "${issue[@]}" \
  --set parallelism.data_parallel_shard=optimizer --set parallelism.data_parallel_shard_size=3
expect 2 'data_parallel_shard_size \(2\) needs parallelism.data_parallel_shard other than none' \
  "shard size with shard none: refused" -- "$ndgraph" plan "$cfg" "${issue[@]}" \
  --set parallelism.data_parallel_shard_size=2
expect 2 "expected one of: none, optimizer, gradients, parameters; got 'zero3'" \
  "shard zero3: refused, the values listed" -- "$ndgraph" plan "$cfg" --set parallelism.data_parallel_shard=zero3
expect 2 'data_parallel_shard_size: .*-1' "shard size -1: refused" -- "$ndgraph" plan "$cfg" \
  --set parallelism.data_parallel_shard_size=-1
expect 2 'data_parallel_shard: parameters does not work with train.precision bf16 yet' \
  "shard parameters with bf16: refused" -- "$ndgraph" plan "$cfg" "${issue[@]}" \
  --set parallelism.data_parallel_shard=parameters --set train.precision=bf16
expect 2 'data_parallel_shard_size \(3\) must divide parallelism.data_parallel_size \(4\)' \
  "shard parameters, size 3 with dp 4: refused" -- "$ndgraph" plan "$cfg" "${issue[@]}" \
  --set parallelism.data_parallel_shard=parameters --set parallelism.data_parallel_shard_size=3
done_testing
