#!/usr/bin/env bash
# What plan --auto and run read besides the configuration: runtime.topology
# and the calibration file. A bad file of either is bad input (one line
# naming it, exit 2, never a wait); run checks the topology as plan does and,
# with parallelism.auto, does not train here with the layout of another
# machine; the calibration's bus keys each act on what they name; and under
# N processes only the chosen layout has to cut across them.
. "${ND_SRCDIR:-.}/tests/tap.sh"

topo8="$srcdir/tests/topologies/gpu8-nvlink2x4.xml"
cal8="$srcdir/configs/calibration-8gpu.json"
tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set train.steps=1
      --set train.eval_every=0 --set train.save_dir= --set runtime.workers=1)

# --- runtime.topology: every malformed file, for plan, plan --auto and run
good="$srcdir/tests/topologies/vm-2core.xml"
: >"$tmp/empty.xml"
head -c 3000 "$good" >"$tmp/truncated.xml"
printf 'garbage <<<\n' >"$tmp/garbage.xml"
{
  printf '<?xml version="1.0"?>\n<!DOCTYPE topology [\n <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">\n'
  prev=a
  for e in b c d e f g h i; do
    printf ' <!ENTITY %s "%s">\n' $e "$(for _ in 1 2 3 4 5 6 7 8 9 10; do printf '&%s;' $prev; done)"
    prev=$e
  done
  printf ']>\n<topology version="2.0"><object type="Machine" os_index="0" cpuset="0x1"><info name="x" value="&i;"/></object></topology>\n'
} >"$tmp/laughs.xml"
printf '<?xml version="1.0"?>\n<notatopology/>\n' >"$tmp/notopology.xml"
sed 's/cpuset="0x0*[1-9a-f][0-9a-f]*"/cpuset="0x0"/g' "$good" >"$tmp/zerocpuset.xml"
mkfifo "$tmp/fifo.xml" # never written: reading it must not wait
mkdir "$tmp/dir.xml"
for f in "$tmp"/{empty,truncated,garbage,laughs,notopology,zerocpuset,fifo,dir}.xml /dev/zero /proc/cpuinfo; do
  name=${f##*/}
  expect_timeout=60 expect 2 "^ndgraph: $f: " "plan: topology $name: one line naming it, exit 2" -- \
    "$ndgraph" plan "${tiny[@]}" --set runtime.topology="$f"
  expect_timeout=60 expect 2 "^ndgraph: $f: " "plan --auto: topology $name: one line naming it, exit 2" -- \
    "$ndgraph" plan --auto "${tiny[@]}" --set runtime.topology="$f"
  expect_timeout=60 expect 2 "^ndgraph: $f: " "run: topology $name: one line naming it, exit 2, before training" -- \
    "$ndgraph" run "${tiny[@]}" --set runtime.topology="$f"
  ! grep -q '^step' "$tmp/out"
  ok $? "run: topology $name: no step trained"
done

# parallelism.auto plans for the machine that trains: not for the 8 GPUs of a
# topology written elsewhere, whose layout would then train here
expect_timeout=120 expect 2 "^ndgraph: $topo8: runtime.topology describes another machine \(8 cuda workers; this one: 1 cpu\)" \
  "run with parallelism.auto and another machine's topology: refused in one line, exit 2" -- \
  "$ndgraph" run "${tiny[@]}" --set parallelism.auto=true --set runtime.topology="$topo8" --calibration "$cal8"
! grep -q '^step' "$tmp/out"
ok $? "... and nothing trained"
timeout -k 10 120 "$ndgraph" run "${tiny[@]}" --set parallelism.auto=true --set runtime.topology="$good" >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 0 ] && grep -q '^parallelism.auto: predicted' "$tmp/out" && grep -q '^step' "$tmp/out"
ok $? "a topology with this machine's workers (one CPU worker) plans and trains (exit $st): $(head -c 200 "$tmp/err")"

# --- calibration files the reader used to take
python3 - "$cal8" "$tmp" <<'PY'
import json, sys
src = open(sys.argv[1]).read()
out = sys.argv[2] + "/"
open(out + "trailing.json", "w").write(src + "\ngarbage\n")
open(out + "dup_bus.json", "w").write(src.replace('"latency_us"', '"host_device_gbs": 3, "latency_us"', 1))
open(out + "dup_kind.json", "w").write(src.replace('"kinds": {', '"kinds": {"adamw": {"cuda": {"overhead_us": 1}}, ', 1))
open(out + "dup_top.json", "w").write(src.replace('"format"', '"step_overhead_us": 5, "format"', 1))
d = json.loads(src)
d["devices"]["cuda"]["memory_bytes"] = 0.5
json.dump(d, open(out + "half.json", "w"))
d = json.loads(src)
for kind in d["kinds"].values():
    for dev in kind.values():
        for k in dev:
            dev[k] = 0
d["bus"] = {"host_device_gbs": 0, "device_device_gbs": 0, "latency_us": 0}
d["devices"]["cuda"] = {"memory_bytes": 0, "gap_us": 0}
d["step_overhead_us"] = 0
json.dump(d, open(out + "zero.json", "w"))
d = json.loads(src)
d["machine"] = "evil \x1b[31mred\x1b[0m\x07"
json.dump(d, open(out + "ctrl.json", "w"))
d["machine"] = "c1 \u009b31m"
json.dump(d, open(out + "c1.json", "w"))
PY
while read -r f why; do
  expect_timeout=60 expect 2 "^ndgraph: $tmp/$f.json: $why" "calibration $f: one line naming the file and the problem, exit 2" -- \
    "$ndgraph" plan --auto --set runtime.topology="$topo8" --calibration "$tmp/$f.json"
  [ ! -s "$tmp/out" ] && ! grep -q $'\e' "$tmp/err"
  ok $? "calibration $f: nothing planned, no escape character printed"
done <<'EOF'
trailing text after the JSON object, at byte [0-9]+$
dup_bus bus.host_device_gbs is given twice$
dup_kind kinds.adamw is given twice$
dup_top "step_overhead_us" is given twice$
half devices.cuda.memory_bytes must be a whole number$
zero every entry of "kinds" is 0
ctrl "machine" must be a string of text without control characters$
c1 "machine" must be a string of text without control characters$
EOF

# --- the planner's choice against the calibration's values: each bus key
# acts on what it names (a reader taking one key's value for another changes
# these), and the best plan on the 8-GPU node is the one the values give
python3 - "$cal8" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for name, key, factor in (("host", "host_device_gbs", 1e-3), ("device", "device_device_gbs", 0.1),
                          ("latency", "latency_us", 10)):
    e = json.loads(json.dumps(d))
    e["bus"][key] *= factor
    json.dump(e, open("%s/%s.json" % (sys.argv[2], name), "w"))
PY
cp "$cal8" "$tmp/base.json"
for n in base host device latency; do
  "$ndgraph" plan --auto --set runtime.topology="$topo8" --calibration "$tmp/$n.json" --json >"$tmp/$n.plans" 2>>"$tmp/err"
done
python3 - "$tmp" >"$tmp/bus.txt" <<'PY'
import json, sys
def plans(n):
    return {tuple(p["set"]): p["predicted_step_ms"] for p in json.load(open("%s/%s.plans" % (sys.argv[1], n)))["plans"]}
base = plans("base")
fixed = [k for k in base if any(a in ("runtime.scheduler=" + o for o in ("1f1b", "zbh1", "zbh2", "gpipe")) for a in k)]
for n in ("host", "device", "latency"):
    x = plans(n)
    print(n, int(x == base), sum(x[k] > base[k] * (1 + 1e-9) for k in base), len(base),
          sum(x[k] > base[k] * (1 + 1e-9) for k in fixed), len(fixed), int(sum(x.values()) > sum(base.values())))
PY
read -r _ host_same _ _ <<<"$(grep '^host ' "$tmp/bus.txt")"
read -r _ _ _ _ fixed_slower n_fixed grows <<<"$(grep '^device ' "$tmp/bus.txt")"
read -r _ _ latency_slower n _ <<<"$(grep '^latency ' "$tmp/bus.txt")"
[ "${host_same:-0}" -eq 1 ]
ok $? "host_device_gbs a thousand times lower: the same plans on a node whose data stays on the GPUs"
# With every task pinned to its worker in a fixed sequence (1f1b, zbh1,
# zbh2, gpipe), a step is a longest path, which no slower transfer can
# shorten: each of these plans must be slower. A dynamic policy (ndws)
# decides from the costs (a thief steals only when it would finish first),
# so a slower bus can change its decisions for the better: a greedy list
# schedule may get faster when one task gets slower (Graham's anomalies);
# only the layouts' total must grow.
[ "${n_fixed:-0}" -gt 0 ] && [ "${fixed_slower:-0}" -eq "${n_fixed:--1}" ] && [ "${grows:-0}" -eq 1 ]
ok $? "device_device_gbs ten times lower: all ${n_fixed:-?} fixed-order plans slower (${fixed_slower:-?}), the total grows (${grows:-?})"
[ "${latency_slower:-0}" -gt $((${n:-0} / 2)) ]
ok $? "latency_us ten times higher: most plans slower (${latency_slower:-?} of ${n:-?})"
python3 - "$tmp/base.plans" >"$tmp/best.txt" <<'PY'
import json, sys
print(" ".join(json.load(open(sys.argv[1]))["plans"][0]["set"]))
PY
want="parallelism.data_parallel_size=1 parallelism.tensor_parallel_size=1 parallelism.pipeline_parallel_size=2"
want="$want parallelism.micro_batches=1 parallelism.activation_slots=1 parallelism.stage_layers=[] train.micro_batch_size=16"
want="$want runtime.placement=affinity runtime.scheduler=ndws"
want="$want train.recompute=none parallelism.data_parallel_shard=none parallelism.data_parallel_shard_size=0"
want="$want parallelism.context_parallel_size=1"
[ "$(cat "$tmp/best.txt")" = "$want" ]
ok $? "configs/calibration-8gpu.json's best plan: pp 2, one micro-batch, affinity, ndws (got: $(cat "$tmp/best.txt"))"

# --- N processes: only the chosen layout has to cut across them (the
# configuration's own dp 1 x pp 1 cannot)
one=(--set parallelism.pipeline_parallel_size=1 --set parallelism.micro_batches=1)
timeout -k 10 120 "$ndgraph" plan --auto "${tiny[@]}" --set runtime.workers=2 "${one[@]}" --nodes 2 >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 0 ] && grep -q '^nodes: 2 processes' "$tmp/out" && grep -q '^best: ' "$tmp/out"
ok $? "plan --auto --nodes 2 on a dp 1 x pp 1 configuration plans and cuts the best plan (exit $st): $(head -c 300 "$tmp/err")"
python3 - "$tmp/out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
best = dict(s.split("=") for s in re.search(r"^best: (.*)$", text, re.M).group(1).replace("--set ", "").split())
rows = [l.split() for l in text.splitlines() if re.match(r"^ ?\d+ +\d", l)]
# dp cp tp pp: context ranks are replicas to the cut
assert rows and all(int(r[4]) * int(r[5]) * int(r[7]) >= 2 for r in rows), "a layout of one (replica, stage) group ranked"
assert int(best["parallelism.data_parallel_size"]) * int(best["parallelism.context_parallel_size"]) * \
    int(best["parallelism.pipeline_parallel_size"]) >= 2
PY
ok $? "... every ranked layout has at least 2 (replica, stage) groups"
# a global batch of one sequence and 2 layers: at most 2 (replica, stage) groups
expect_timeout=120 expect 2 "plan --auto: no layout cuts across 3 processes" \
  "plan --auto --nodes 3 where no layout has 3 groups: one line, exit 2" -- \
  "$ndgraph" plan --auto "${tiny[@]}" "${one[@]}" --set train.micro_batch_size=1 --nodes 3
# parallelism.auto under mpirun -np 2 (one CPU worker each): the same, and it trains
if command -v mpirun >/dev/null && "$ndgraph" --version | grep -q 'MPI yes'; then
  timeout -k 10 120 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 \
    OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo \
    mpirun --oversubscribe -x STARPU_HOME -x STARPU_SILENT -x STARPU_NCPU -x STARPU_WORKERS_NOBIND -np 2 \
    "$ndgraph" run "${tiny[@]}" "${one[@]}" --set parallelism.auto=true >"$tmp/out" 2>&1
  st=$?
  [ "$st" -eq 0 ] && grep -q '^parallelism.auto: predicted' "$tmp/out" && grep -q '^step' "$tmp/out"
  ok $? "mpirun -np 2 run with parallelism.auto on a dp 1 x pp 1 configuration trains a layout that cuts (exit $st): $(grep -m1 '^ndgraph: ' "$tmp/out")"
else
  echo "ok $((++tap_n)) # SKIP no mpirun or a build without MPI"
fi
done_testing
