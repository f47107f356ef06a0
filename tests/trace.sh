#!/bin/sh
# ndgraph trace summarize / svg on the hand-made trace with known answers
# (tests/traces/README.md), and the SVG of a real traced run, parsed as XML.
ND="${ND_BUILDDIR:-.}/ndgraph"
SRC="${ND_SRCDIR:-.}"
HAND="$SRC/tests/traces/handmade.json"
TMP="${TMPDIR:-/tmp}/nd-trace-sh.$$"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
n=0
fails=0
ok() { # ok STATUS NAME
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
has() { grep -E -q "$1" "$TMP/out.txt"; }

"$ND" trace summarize "$HAND" >"$TMP/out.txt" 2>&1
ok $? "summarize (text) runs"
has '6 tasks on 2 workers, span 0\.400 ms'; ok $? "text: tasks, workers, span"
has '^  CPU 0 +4 +0\.300 +0\.100 +25\.0%$'; ok $? "text: CPU 0 busy 0.300 idle 0.100 bubble 25%"
has '^  CPU 1 +2 +0\.100 +0\.300 +75\.0%$'; ok $? "text: CPU 1 busy 0.100 idle 0.300 bubble 75%"
has '^  all +6 +0\.400 +0\.400 +50\.0%$'; ok $? "text: overall bubble 50%"
has '^  matmul_fwd +2 +0\.130 ms'; ok $? "text: time per kind"
has '^  F +2 +0\.130 ms'; ok $? "text: time per phase"
has '^critical path: 5 tasks, 0\.350 ms'; ok $? "text: critical path"
has '^lower bound: 0\.330 ms = max\(longest dependency path 0\.330 ms, work 0\.400 ms / 2 workers = 0\.200 ms\)'
ok $? "text: lower bound (Z need not come before A: the arrows' longest path A C D E)"
has '^efficiency: 82\.5%'; ok $? "text: efficiency"
has '^with each task on the worker it ran on: lower bound 0\.330 ms .*efficiency 82\.5%$'
ok $? "text: the bound with this placement"

"$ND" trace summarize "$HAND" --json >"$TMP/sum.json" 2>&1
ok $? "summarize --json runs"
python3 - "$TMP/sum.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w = {x["name"]: x for x in s["per_worker"]}
checks = [
    s["tasks"] == 6, s["workers"] == 2, s["span_us"] == 400, s["work_us"] == 400,
    w["CPU 0"]["busy_us"] == 300, w["CPU 0"]["idle_us"] == 100, w["CPU 0"]["bubble_fraction"] == 0.25,
    w["CPU 1"]["busy_us"] == 100, w["CPU 1"]["idle_us"] == 300, w["CPU 1"]["bubble_fraction"] == 0.75,
    s["bubble_fraction"] == 0.5,
    {p["name"]: p["time_us"] for p in s["per_phase"]} == {"F": 130, "B": 100, "W": 50, "collective": 20, "optimizer": 100},
    s["critical_path"]["length_us"] == 350,
    [t["task"] for t in s["critical_path"]["tasks"]] == [0, 1, 3, 4, 5],
    s["dependency_path_us"] == 330, s["lower_bound_us"] == 330, abs(s["efficiency"] - 0.825) < 1e-12,
    s["placed_lower_bound_us"] == 330, abs(s["placed_efficiency"] - 0.825) < 1e-12,
    [w["CPU 0"][k] for k in ("idle_start_us", "idle_waits_us", "idle_short_gaps_us", "short_gaps", "idle_end_us")]
    == [0, 100, 0, 0, 0],
    [w["CPU 1"][k] for k in ("idle_start_us", "idle_waits_us", "idle_short_gaps_us", "short_gaps", "idle_end_us")]
    == [100, 100, 0, 0, 100],
    # CPU 1's W (task 4) waited for CPU 0's B (task 3, ends at 1200), then 50 us more with W ready
    w["CPU 0"]["idle_ready_us"] == 0, w["CPU 1"]["idle_ready_us"] == 50,
]
bad = [i for i, c in enumerate(checks) if not c]
if bad:
    print("# failed checks", bad, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
ok $? "json: busy, idle (start, waits, short gaps, end), bubble, phases, critical path Z A C D E, lower bound, efficiency"
has '^  CPU 1 +0\.100 +0\.100 +0\.000 \( +0\) +0\.050 +0\.100$'
ok $? "text: CPU 1 idle 0.100 at the start, 0.100 waiting (0.050 of it with its next task ready), 0.100 at the end"

# with each task kept on its worker: CPU 1 runs b (after a) and c (no input), 30 us of work from 0 at the
# earliest, where the dependency path (a b, 20) and the work per worker (40 / 2) give 20
cat >"$TMP/placed.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
 {"ph": "X", "name": "b", "pid": 0, "tid": 1, "ts": 10, "dur": 10},
 {"ph": "X", "name": "c", "pid": 0, "tid": 1, "ts": 20, "dur": 20},
 {"ph": "s", "name": "dep", "id": 1, "pid": 0, "tid": 0, "ts": 9},
 {"ph": "f", "name": "dep", "id": 1, "bp": "e", "pid": 0, "tid": 1, "ts": 11}]}
JSON
"$ND" trace summarize "$TMP/placed.json" --json >"$TMP/placed.out" 2>&1
python3 - "$TMP/placed.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = [d[k] for k in ("dependency_path_us", "lower_bound_us", "efficiency", "placed_lower_bound_us", "placed_efficiency")]
sys.exit(0 if got == [20, 20, 0.5, 30, 0.75] else 1)
PY
ok $? "json: the bound with this placement (30 us) above max(dependency path, work / workers) (20 us)"

# gaps under 100 us between a worker's tasks are the runtime's, longer ones waits: 10 + 50 short, 230 a wait
cat >"$TMP/gaps.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
 {"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 20, "dur": 30},
 {"ph": "X", "name": "c", "pid": 0, "tid": 0, "ts": 100, "dur": 10},
 {"ph": "X", "name": "d", "pid": 0, "tid": 0, "ts": 340, "dur": 10}]}
JSON
"$ND" trace summarize "$TMP/gaps.json" --json >"$TMP/gaps.out" 2>&1
python3 - "$TMP/gaps.out" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["per_worker"][0]
sys.exit(0 if [w[k] for k in ("idle_short_gaps_us", "short_gaps", "idle_waits_us", "idle_us")] == [60, 2, 230, 290] else 1)
PY
ok $? "json: short gaps (10 + 50 us, 2) apart from a wait (230 us)"

# ready: the part of each gap during which the task the worker ran next had every arrow into it ended.
# CPU 0: a, b (after a: its 10 us gap ready), d (after c on CPU 1, ends at 150: 50 of the 150 us gap),
# e (no arrows: never ready; f, run after it, was, but a policy may have chosen to wait for e), f (after c: 90 us)
cat >"$TMP/ready.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
 {"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 20, "dur": 30},
 {"ph": "X", "name": "c", "pid": 0, "tid": 1, "ts": 100, "dur": 50},
 {"ph": "X", "name": "d", "pid": 0, "tid": 0, "ts": 200, "dur": 10},
 {"ph": "X", "name": "e", "pid": 0, "tid": 0, "ts": 300, "dur": 10},
 {"ph": "X", "name": "f", "pid": 0, "tid": 0, "ts": 400, "dur": 10},
 {"ph": "s", "name": "dep", "id": 1, "pid": 0, "tid": 0, "ts": 5},
 {"ph": "f", "name": "dep", "id": 1, "bp": "e", "pid": 0, "tid": 0, "ts": 25},
 {"ph": "s", "name": "dep", "id": 2, "pid": 0, "tid": 1, "ts": 120},
 {"ph": "f", "name": "dep", "id": 2, "bp": "e", "pid": 0, "tid": 0, "ts": 205},
 {"ph": "s", "name": "dep", "id": 3, "pid": 0, "tid": 1, "ts": 130},
 {"ph": "f", "name": "dep", "id": 3, "bp": "e", "pid": 0, "tid": 0, "ts": 405}]}
JSON
"$ND" trace summarize "$TMP/ready.json" --json >"$TMP/ready.out" 2>&1
python3 - "$TMP/ready.out" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["per_worker"]
got = [[x[k] for k in ("idle_waits_us", "idle_short_gaps_us", "idle_ready_us")] for x in w]
sys.exit(0 if got == [[150, 190, 150], [0, 0, 0]] else 1)
PY
ok $? "json: idle with the next task ready (10 + 50 + 0 + 90 us of CPU 0's 340 us of gaps)"

# several traced steps (trace.steps: [2, 50]) are laid end to end: the 9850 us between them, other steps',
# are no worker's idle time; each step keeps its span; steps that overlap in time are left as they are
cat >"$TMP/steps.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 100, "args": {"step": 2}},
 {"ph": "X", "name": "b", "pid": 0, "tid": 1, "ts": 50, "dur": 100, "args": {"step": 2}},
 {"ph": "X", "name": "c", "pid": 0, "tid": 0, "ts": 10000, "dur": 200, "args": {"step": 50}},
 {"ph": "X", "name": "d", "pid": 0, "tid": 1, "ts": 10100, "dur": 50, "args": {"step": 50}}]}
JSON
"$ND" trace summarize "$TMP/steps.json" --json >"$TMP/steps.out" 2>&1
python3 - "$TMP/steps.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
steps = [(s["step"], s["span_us"], s["busy_us"], round(s["bubble_fraction"], 4)) for s in d["steps"]]
idle = [[w[k] for k in ("idle_start_us", "idle_waits_us", "idle_short_gaps_us", "idle_end_us")] for w in d["per_worker"]]
sys.exit(0 if steps == [(2, 150, 200, 0.3333), (50, 200, 250, 0.375)] and d["span_us"] == 350 and
         round(d["bubble_fraction"], 4) == 0.3571 and idle == [[0, 0, 0, 50], [150, 0, 0, 50]] else 1)
PY
ok $? "json: steps 2 and 50 laid end to end: span 350 us, per-step spans and bubbles, start and end per step"
"$ND" trace summarize "$TMP/steps.json" >"$TMP/steps.txt" 2>&1
grep -q "^2 steps laid end to end" "$TMP/steps.txt" && grep -Eq "^  50 +0\.200 +0\.250 +37\.5%$" "$TMP/steps.txt"
ok $? "text: the steps' table ($(grep -c . "$TMP/steps.txt") lines)"
# (step 50 starts at 110 us on CPU 0 while step 2 runs on CPU 1 until 150 us)
sed 's/"ts": 10000/"ts": 110/; s/"ts": 10100/"ts": 160/' "$TMP/steps.json" >"$TMP/overlap.json"
"$ND" trace summarize "$TMP/overlap.json" --json >"$TMP/overlap.out" 2>&1
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if "steps" not in d and d["span_us"] == 310 else 1)' \
  "$TMP/overlap.out"
ok $? "json: steps that overlap in time are left as they are"

# a well-formed SVG with one box per task, and the count of boxes
svg_boxes() {
  python3 - "$1" <<'PY'
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
print(sum(1 for r in d.getElementsByTagName("rect") if r.getAttribute("class") == "task"))
PY
}
"$ND" trace svg "$HAND" -o "$TMP/hand.svg" && [ "$(svg_boxes "$TMP/hand.svg")" = 6 ]
ok $? "svg of the hand-made trace: well-formed XML, 6 task boxes"

"$ND" run --set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 \
  --set parallelism.pipeline_parallel_size=2 --set parallelism.micro_batches=4 --set runtime.workers=2 \
  --set train.steps=2 --set train.eval_every=0 --set train.save_dir= \
  --set trace.svg="$TMP/run.svg" --trace "$TMP/run.json" >"$TMP/run.txt" 2>&1
st=$?
[ $st -eq 0 ] || sed 's/^/# /' "$TMP/run.txt"
ok $st "ndgraph run --trace"
tasks=$("$ND" trace summarize "$TMP/run.json" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tasks"])')
planned=$("$ND" plan --set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 \
  --set parallelism.pipeline_parallel_size=2 --set parallelism.micro_batches=4 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["tasks"])')
[ -n "$tasks" ] && [ "$(svg_boxes "$TMP/run.svg")" = "$tasks" ]
ok $? "svg written by run: well-formed XML, one box per traced task ($tasks)"
"$ND" trace svg "$TMP/run.json" -o "$TMP/again.svg" && [ "$(svg_boxes "$TMP/again.svg")" = "$tasks" ]
ok $? "trace svg of the run's file: one box per task"
[ -n "$planned" ] && [ "$planned" = "$tasks" ]; ok $? "the trace holds every task the plan lists ($planned)"
# chains (tasks/chain.h) report their tasks one by one: in the order they ran, none overlapping another on its worker
python3 - "$TMP/run.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
for w in {e["tid"] for e in ev}:
    mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["tid"] == w)
    assert all(a[1] <= b[0] + 0.01 for a, b in zip(mine, mine[1:])), w
assert all(e["dur"] >= 0 for e in ev)
PY
ok $? "a worker's traced tasks never overlap"

# four stages on two workers, strict: they share the workers in V order
"$ND" run --set model.n_layer=4 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 \
  --set parallelism.pipeline_parallel_size=4 --set parallelism.micro_batches=4 --set runtime.workers=2 \
  --set runtime.placement=strict --set train.steps=2 --set train.eval_every=0 --set train.save_dir= \
  --trace "$TMP/v.json" >"$TMP/v.txt" 2>&1 &&
  python3 - "$TMP/v.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
on = {}
for e in ev:
    if e.get("ph") == "X" and e["args"]["phase"] != "collective":
        on.setdefault(e["args"]["pp"], set()).add(e["tid"])
assert all(len(w) == 1 for w in on.values()), on
assert on[0] == on[3] and on[1] == on[2] and on[0] != on[1], on
PY
ok $? "pp=4 on 2 workers, strict: stages 0 and 3 on one worker, 1 and 2 on the other"

# idle workers that help (runtime.wait_policy: help) show as "help" slices between their own tasks, on the
# benchmark's layer width, where kernels are large enough to share
"$ND" run --set model.n_layer=2 --set model.n_embd=256 --set model.n_head=4 --set model.seq_len=128 \
  --set train.micro_batch_size=4 --set parallelism.pipeline_parallel_size=2 --set parallelism.micro_batches=4 \
  --set runtime.workers=2 --set runtime.placement=strict --set runtime.wait_policy=help --set train.steps=3 \
  --set 'trace.steps=[2,3]' --set train.eval_every=0 --set train.save_dir= \
  --trace "$TMP/help.json" >"$TMP/help.txt" 2>&1
ok $? "ndgraph run --trace with idle workers helping"
helps=$(python3 - "$TMP/help.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
helps = [e for e in ev if e["name"] == "help"]
assert all(e["cat"] == "help" and e["args"]["phase"] == "help" and e["dur"] > 0 for e in helps)
for w in {e["tid"] for e in ev}:
    mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["tid"] == w)
    assert all(a[1] <= b[0] + 0.01 for a, b in zip(mine, mine[1:])), w
print(len(helps))
PY
)
ok $? "help slices: phase help, each between its worker's tasks ($helps)"
"$ND" trace summarize "$TMP/help.json" >"$TMP/help.sum" 2>&1
ok $? "summarize reads a trace with help slices"
if [ "${helps:-0}" -gt 0 ]; then
  grep -E -q '^  help +[0-9]+ ' "$TMP/help.sum"
  ok $? "summarize: the help time among the kinds"
else
  n=$((n + 1))
  echo "ok $n # SKIP no worker got a core to help in the traced steps (a loaded machine)"
fi

"$ND" trace summarize "$TMP/missing.json" >/dev/null 2>&1
[ $? -eq 2 ]; ok $? "a missing file is bad input (exit 2)"
echo '{"a": 1}' >"$TMP/not.json"
"$ND" trace summarize "$TMP/not.json" >/dev/null 2>&1
[ $? -eq 2 ]; ok $? "JSON that is not a trace is bad input (exit 2)"
# a slice without a time, or with a negative duration, is refused with its index, not read as 0;
# and one whose thread id is not an integer, not folded into thread 0:0
o='"pid": 0, "tid": 0'
for bad in "$o, \"ts\": \"5\", \"dur\": 1|ts is missing or not a number" "$o, \"dur\": 1|ts is missing or not a number" \
  "$o, \"ts\": 5|dur is missing or not a number" "$o, \"ts\": 5, \"dur\": -3|dur -3 is negative" \
  '"pid": "p", "tid": 0, "ts": 5, "dur": 1|pid is not an integer' \
  '"pid": 0, "tid": {}, "ts": 5, "dur": 1|tid is not an integer' \
  '"pid": 0, "tid": 1.5, "ts": 5, "dur": 1|tid is not an integer' \
  '"pid": 1e12, "tid": 0, "ts": 5, "dur": 1|pid is not an integer'; do
  echo "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"ok\", \"ts\": 0, \"dur\": 1, $o},
    {\"ph\": \"X\", \"name\": \"a\", ${bad%%|*}}]}" >"$TMP/bad-event.json"
  msg=$("$ND" trace summarize "$TMP/bad-event.json" 2>&1 >/dev/null)
  [ $? -eq 2 ] && [ "$msg" = "ndgraph: $TMP/bad-event.json: event 1 (\"a\"): ${bad#*|}" ]
  ok $? "a slice with ${bad%%|*}: one line naming the file and event 1, exit 2 ($msg)"
done
# nested slices on one thread (a profiler's call stack) would count its time twice: refused by both tools
echo '{"traceEvents": [{"ph": "X", "name": "outer", "pid": 0, "tid": 0, "ts": 0, "dur": 100},
  {"ph": "X", "name": "inner", "pid": 0, "tid": 0, "ts": 10, "dur": 40}]}' >"$TMP/nested.json"
want="ndgraph: $TMP/nested.json: event 1 (\"inner\") starts at 10.000 us, inside event 0 (\"outer\", 0.000-100.000 us) on thread 0:0; the summary and the chart need one task at a time on a thread"
msg=$("$ND" trace summarize "$TMP/nested.json" 2>&1 >/dev/null)
[ $? -eq 2 ] && [ "$msg" = "$want" ]
ok $? "trace summarize: nested slices refused in one line, exit 2 ($msg)"
msg=$("$ND" trace svg "$TMP/nested.json" -o "$TMP/nested.svg" 2>&1 >/dev/null)
[ $? -eq 2 ] && [ "$msg" = "$want" ] && [ ! -e "$TMP/nested.svg" ]
ok $? "trace svg: nested slices refused, no file written"
# a zero-length slice at the start of the next one (the job trace of processes squeezes a remote task
# to its successor's start): one task after the other, in whichever order the file lists them
echo '{"traceEvents": [{"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 30, "dur": 10},
  {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 30, "dur": 0}]}' >"$TMP/stacked.json"
"$ND" trace summarize "$TMP/stacked.json" >"$TMP/stacked.out" 2>&1
ok $? "trace summarize: a zero-length slice at the next one's start is not nested ($(head -c 200 "$TMP/stacked.out"))"
# the event's name is shown on the same line: its control characters become '?' (found by scripts/fuzz-trace.sh)
printf '{"traceEvents": [{"ph": "X", "name": "a\\nb\\u0001c", "pid": 0, "tid": 0, "ts": 0, "dur": 1e999}]}' \
  >"$TMP/bad-name.json"
msg=$("$ND" trace summarize "$TMP/bad-name.json" 2>&1 >/dev/null)
[ $? -eq 2 ] && [ "$msg" = "ndgraph: $TMP/bad-name.json: event 0 (\"a?b?c\"): dur inf is not a time within +-1e18 us" ]
ok $? "a name with a newline in an error: still one line ($msg)"
# names in the summary come from the file: a terminal must not act on their control characters (ESC, BEL,
# the C1 CSI U+009B), shown as \xHH; other UTF-8 text as it is
sed -e 's/"matmul_fwd"/"matmul\\u001b[31m_fwd"/' -e 's/"CPU 1"/"CPU\\u0007 \\u009b1"/' -e 's/"CPU 0"/"CPU é0"/' \
  "$HAND" >"$TMP/ctrl.json"
"$ND" trace summarize "$TMP/ctrl.json" >"$TMP/out.txt" 2>&1
[ $? -eq 0 ] && [ "$(LC_ALL=C tr -d '\n\040-\176' <"$TMP/out.txt" | LC_ALL=C tr -d '\303\251' | wc -c)" -eq 0 ] &&
  has '^  matmul\\x1b\[31m_fwd +2 +0\.130 ms' && has '^  CPU\\x07 \\xc2\\x9b1 +2 ' && has '^  CPU é0 +4 '
ok $? "summarize: control characters in names escaped, UTF-8 kept"
"$ND" trace frobnicate "$HAND" >/dev/null 2>&1
[ $? -eq 2 ]; ok $? "an unknown trace action is a usage error"

echo "1..$n"
[ "$fails" -eq 0 ]
