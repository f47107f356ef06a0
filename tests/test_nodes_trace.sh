#!/usr/bin/env bash
# A trace under mpirun with each process building only its share
# (docs/nodes.md, docs/tracing.md): pp 2 on 2 processes and tp 2 x pp 3 on
# 3, where some process's graph is below the step's (a trace no longer
# builds the whole step). Process 0's file holds the same task events (name,
# phase, rank, micro-batch, layer, FLOPs, bytes, step) as the trace of the
# layout in one process, which builds the step, and as many arrows, each
# between tasks that one of that trace's arrows joins; a process per node with its worker; each node's tasks are those
# `plan --nodes N` says it runs; `trace summarize` counts the same tasks per
# kind and phase. A data-parallel group across processes sums in chunks, a
# step one process does not run, so these layouts have none; tests/test_trace_share
# checks those against the step built for the process count.
. "${ND_SRCDIR:-.}/tests/tap.sh"
. "${ND_SRCDIR:-.}/tests/mpirun.sh"
cfg="$srcdir/configs/quickstart.yaml"
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=16 --set train.steps=2
  --set log.every=1 --set train.save_dir= --set train.eval_every=0 --set train.warmup_steps=1
  --set parallelism.micro_batches=2 --set parallelism.activation_slots=2 --set runtime.workers=1
  --set parallelism.pipeline_parallel_size=2)

for case in "2|pp=2|--set parallelism.data_parallel_size=1" "3|tp=2 pp=3|--set parallelism.tensor_parallel_size=2 --set parallelism.pipeline_parallel_size=3 --set model.n_layer=3"; do
  IFS='|' read -r np name sets <<<"$case"
  sets=($sets)
  "$ndgraph" run "$cfg" "${tiny[@]}" "${sets[@]}" --trace "$tmp/one.json" >"$tmp/one.out" 2>&1
  "$ndgraph" plan "$cfg" "${tiny[@]}" "${sets[@]}" --nodes "$np" >"$tmp/plan.out" 2>&1
  "${mpirun[@]}" -np "$np" "$ndgraph" run "$cfg" "${tiny[@]}" "${sets[@]}" --trace "$tmp/n.json" \
    --metrics "$tmp/n.jsonl" >"$tmp/n.out" 2>&1
  st=$?
  [ $st -eq 0 ] || sed 's/^/# /' "$tmp/n.out" | tail -5
  "$ndgraph" trace summarize --json "$tmp/one.json" >"$tmp/one.sum" 2>&1
  "$ndgraph" trace summarize --json "$tmp/n.json" >"$tmp/n.sum" 2>&1
  python3 - "$np" "$tmp/one.json" "$tmp/n.json" "$tmp/n.jsonl" "$tmp/plan.out" "$tmp/one.sum" "$tmp/n.sum" <<'PY'
import collections, json, re, sys
np = int(sys.argv[1])

def load(path):
    """The tracks, the tasks' identities and the arrows between them: each
    end of an arrow is the slices around it, several where zero-length
    slices stack at one time (the viewers cannot tell those apart either)."""
    ev = json.load(open(path))["traceEvents"]
    names = {(e["name"], e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and "name" in e["args"]}
    tasks = [e for e in ev if e["ph"] == "X" and e["name"] != "help"]
    key = lambda e: json.dumps([e["name"], e["cat"], {k: v for k, v in e["args"].items() if k != "task"}], sort_keys=True)
    threads = collections.defaultdict(list)
    for e in tasks:
        threads[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], key(e)))
    def around(f):
        return [k for start, end, k in threads[(f["pid"], f["tid"])] if start <= f["ts"] <= end]
    starts = {f["id"]: around(f) for f in ev if f["ph"] == "s"}
    arrows = [(starts.get(f["id"], []), around(f)) for f in ev if f["ph"] == "f"]
    return names, tasks, collections.Counter(map(key, tasks)), arrows

_, _, one_tasks, one_arrows = load(sys.argv[2])
names, tasks, n_tasks, n_arrows = load(sys.argv[3])
one_pairs = {(x, y) for a, b in one_arrows for x in a for y in b}
steps = [l for l in map(json.loads, open(sys.argv[4])) if "loss" in l]
built = steps[-1]["graph_tasks"] if steps else []
whole = sum(one_tasks.values())
runs = [int(x) for x in re.findall(r"^  process \d+: .*\| runs (\d+) tasks", open(sys.argv[5]).read(), re.M)]
per_pid = [sum(1 for e in tasks if e["pid"] == p) for p in range(np)]
tracks = {(n, p, t) for n, p, t in names} == {("process_name", p, 0) for p in range(np)} | {("thread_name", p, p) for p in range(np)} \
    and all(names[("process_name", p, 0)] == f"ndgraph process {p}" and names[("thread_name", p, p)] == f"p{p} CPU 0" for p in range(np))
counts = lambda s: (s["tasks"], sorted((k["name"], k["count"]) for k in s["per_kind"]), sorted((k["name"], k["count"]) for k in s["per_phase"]))
one_sum, n_sum = (json.load(open(p)) for p in sys.argv[6:8])
checks = {
    "a share below the step": len(built) == np and min(built) < whole,
    "same task events": one_tasks == n_tasks and whole > 0,
    "same arrows": len(one_arrows) == len(n_arrows) > 0 and all(a and b for a, b in n_arrows)
    and all(any((x, y) in one_pairs for x in a for y in b) for a, b in n_arrows),
    "a process per node": tracks,
    "each node's tasks the plan's": per_pid == runs,
    "same summary counts": counts(one_sum) == counts(n_sum),
}
print(f"# graphs per process {built} of {whole} tasks; tasks per node {per_pid}, plan {runs}; "
      f"arrows {len(n_arrows)} (one process {len(one_arrows)}); failed: {[k for k, v in checks.items() if not v]}")
sys.exit(0 if all(checks.values()) else 1)
PY
  parsed=$?
  [ $st -eq 0 ] && [ $parsed -eq 0 ]
  ok $? "$np processes, $name, traced: shares below the step, process 0's trace has the tasks and arrows of one process's"
done
done_testing
