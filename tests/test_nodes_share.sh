#!/usr/bin/env bash
# Each process builds only its share (docs/nodes.md): under `mpirun -np 4`
# the losses, gradient norms and evaluation losses are those of one process,
# bit for bit, and the processes' step graphs hold fewer tasks than the
# whole step: every process's at dp 2 x pp 2 (also with stage_layers auto,
# whose times each process sums over its own tasks) and dp 2 x tp 2 x pp 2; at
# tp 2 x pp 2 (split tensor groups) the last stage's, since a share is cut
# at (replica, stage) pairs and the first stage's needs the next stage's
# work for its hand-overs. The run's summary gives process 0's count and
# the step's, which is the whole step graph's cut across 4 processes (`plan
# --nodes 4`: its data-parallel sums in chunks).
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg="$srcdir/configs/quickstart.yaml"
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16 --set train.steps=2
  --set log.every=1 --set train.save_dir= --set train.eval_every=2 --set train.eval_batches=1 --set train.warmup_steps=1
  --set parallelism.micro_batches=2 --set parallelism.activation_slots=2 --set runtime.workers=1
  --set parallelism.pipeline_parallel_size=2)

# name|the processes whose graphs are below the step's|--set arguments
for case in "dp=2 pp=2|0 1 2 3|--set parallelism.data_parallel_size=2" \
  "dp=2 tp=2 pp=2|0 1 2 3|--set parallelism.data_parallel_size=2 --set parallelism.tensor_parallel_size=2" \
  "tp=2 pp=2|2 3|--set parallelism.tensor_parallel_size=2 --set runtime.split_tensor_groups=true" \
  "dp=2 pp=2 stage_layers auto|0 1 2 3|--set parallelism.data_parallel_size=2 --set parallelism.stage_layers=auto"; do
  IFS='|' read -r name below sets <<<"$case"
  sets=($sets)
  "$ndgraph" run "$cfg" "${tiny[@]}" "${sets[@]}" --metrics "$tmp/one.jsonl" >"$tmp/one.out" 2>&1
  "$ndgraph" plan "$cfg" "${tiny[@]}" "${sets[@]}" --nodes 4 >"$tmp/plan.out" 2>&1
  "${mpirun[@]}" -np 4 "$ndgraph" run "$cfg" "${tiny[@]}" "${sets[@]}" --metrics "$tmp/n.jsonl" >"$tmp/n.out" 2>&1
  st=$?
  [ $st -eq 0 ] || sed 's/^/# /' "$tmp/n.out" | tail -5
  python3 - "$tmp/one.jsonl" "$tmp/n.jsonl" "$tmp/n.out" "$tmp/plan.out" $below <<'PY'
import json, re, sys
one, n = ([l for l in map(json.loads, open(p))] for p in sys.argv[1:3])
# the steps' losses and gradient norms, and the evaluation's loss
bits = lambda ls: [(l["step"], l.get("loss"), l.get("grad_norm"), l.get("val_loss")) for l in ls if "loss" in l or "val_loss" in l]
m = re.search(r"^mpirun: 4 processes; process 0 builds (\d+) tasks and submits (\d+) of the step's (\d+)$",
              open(sys.argv[3]).read(), re.M)
step = int(m.group(3)) if m else 0
whole = re.search(r"^training-step graph: (\d+) tasks", open(sys.argv[4]).read(), re.M)
steps = [l for l in n if "loss" in l]
built = steps[-1].get("graph_tasks", []) if steps else []
below = [int(p) for p in sys.argv[5:]]
print(f"# whole step {step} tasks (plan: {whole.group(1) if whole else '?'}); graphs per process {built}; same bits: {bits(one) == bits(n)}")
sys.exit(0 if bits(one) == bits(n) and len(steps) == 2 and any("val_loss" in l for l in n) and m and len(built) == 4
         and all(0 < b <= step for b in built) and all(built[p] < step for p in below)
         and int(m.group(1)) == built[0] and whole and int(whole.group(1)) == step else 1)
PY
  ok $? "4 processes, $name: processes $below build fewer tasks than the step's, with the bits of one process (steps and evaluation)"
done
done_testing
