#!/usr/bin/env bash
# `ndgraph plot`: a run's --metrics file (and several overlaid) becomes an SVG
# whose axes and polylines are checked by parsing it (one polyline per
# series, finite coordinates inside the chart, the values' order kept), and
# hostile metrics files give one line and exit 2, or a correct chart.
. "${ND_SRCDIR:-.}/tests/tap.sh"

tiny=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set train.steps=30
  --set train.eval_every=10 --set log.every=1 --set train.save_dir=)
"$ndgraph" run "${tiny[@]}" --metrics "$tmp/a.jsonl" >"$tmp/a.out" 2>&1
ok $? "a tiny run writes its metrics"
"$ndgraph" run "${tiny[@]}" --set train.lr=3e-3 --metrics "$tmp/b.jsonl" >"$tmp/b.out" 2>&1
ok $? "a second run, another learning rate"

# check SVG [METRICS...]: the chart's structure against the metrics files
# (each file one run, in order); prints what is wrong, exits 1 then
check() {
  python3 - "$@" <<'PY'
import json, math, sys
import xml.etree.ElementTree as ET
svg, files = sys.argv[1], sys.argv[2:]
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(svg).getroot()
w, h = float(root.get("width")), float(root.get("height"))
bad = []
panels = root.findall("s:g[@class='panel']", ns)
keys = {"loss": "loss", "val_loss": "loss", "lr": "learning rate", "tokens_per_s": "tokens/s"}
want = {}
for f in files:
    for line in open(f):
        if not line.strip(): continue
        o = json.loads(line)
        for k in keys:
            if k in o and math.isfinite(o[k]): want.setdefault((f, k), {})[o["step"]] = o[k]
for p in panels:
    if len(p.findall("s:g[@class='axis']", ns)) != 2: bad.append(f"panel {p.get('data-panel')}: not two axes")
if len(panels) != len({keys[k] for _, k in want}): bad.append(f"{len(panels)} panels")
lines = root.findall(".//s:polyline[@class='series']", ns)
got = {(l.get("data-run"), l.get("data-metric")): l for l in lines}
if len(lines) != len(want) or set(got) != set(want): bad.append(f"series {sorted(got)} want {sorted(want)}")
for key, l in got.items():
    pts = [tuple(map(float, p.split(","))) for p in l.get("points").split()]
    if not pts or not all(math.isfinite(x) and math.isfinite(y) and 0 <= x <= w and 0 <= y <= h for x, y in pts):
        bad.append(f"{key}: a point outside the chart or not finite"); continue
    if any(b[0] < a[0] for a, b in zip(pts, pts[1:])): bad.append(f"{key}: x goes back")
    values = [v for _, v in sorted(want.get(key, {}).items())]
    if len(values) <= 800 and len(values) > 1:
        if len(pts) != len(values): bad.append(f"{key}: {len(pts)} points for {len(values)} values")
        # a higher value is drawn higher (smaller y), a step later further right
        elif any((va < vb) != (pa[1] > pb[1]) for (va, pa), (vb, pb) in zip(zip(values, pts), zip(values[1:], pts[1:])) if va != vb):
            bad.append(f"{key}: the values' order is not the points' order")
for b in bad: print("# " + b)
sys.exit(1 if bad else 0)
PY
}

"$ndgraph" plot "$tmp/a.jsonl" -o "$tmp/a.svg" >"$tmp/out" 2>"$tmp/err"
ok $(($? + $(wc -c <"$tmp/err"))) "plot of one run: exit 0, nothing on stderr"
check "$tmp/a.svg" "$tmp/a.jsonl"
ok $? "one run: three panels of two axes, a polyline for each of loss, val_loss, lr, tokens_per_s, points in order"
"$ndgraph" plot "$tmp/a.jsonl" "$tmp/b.jsonl" -o "$tmp/ab.svg" 2>"$tmp/err" && check "$tmp/ab.svg" "$tmp/a.jsonl" "$tmp/b.jsonl"
ok $? "two runs overlaid: each run's four series"

# a run resumed from an earlier checkpoint appends steps it already logged: the later values count
printf '{"step": %d, "loss": %d}\n' 1 9 2 8 3 7 4 6 2 5 3 4 4 3 5 2 >"$tmp/resumed.jsonl"
"$ndgraph" plot "$tmp/resumed.jsonl" -o "$tmp/r.svg" && python3 - "$tmp/r.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
l = ET.parse(sys.argv[1]).getroot().find(".//{http://www.w3.org/2000/svg}polyline")
ys = [float(p.split(",")[1]) for p in l.get("points").split()]
sys.exit(0 if len(ys) == 5 and ys == sorted(ys) else 1) # 9 5 4 3 2: falling, y growing
PY
ok $? "a step logged twice (a resumed run) keeps its later value"

: >"$tmp/empty.jsonl"
expect 2 "empty.jsonl: no metrics: the file has no line" "an empty file" -- "$ndgraph" plot "$tmp/empty.jsonl" -o "$tmp/x.svg"
printf '{"step": 1, "loss": 2}\nnot json\n' >"$tmp/text.jsonl"
expect 2 "text.jsonl:2: not a JSON object" "a line that is not JSON" -- "$ndgraph" plot "$tmp/text.jsonl" -o "$tmp/x.svg"
printf '{"loss": 2}\n' >"$tmp/nostep.jsonl"
expect 2 'nostep.jsonl:1: no "step" number' "a line without step" -- "$ndgraph" plot "$tmp/nostep.jsonl" -o "$tmp/x.svg"
printf '{"step": 1, "loss": "low"}\n' >"$tmp/str.jsonl"
expect 2 'str.jsonl:1: "loss" is not a number' "a value that is not a number" -- "$ndgraph" plot "$tmp/str.jsonl" -o "$tmp/x.svg"
printf '{"step": 1, "grad_norm": 2}\n' >"$tmp/none.jsonl"
expect 2 "none.jsonl: nothing to plot" "no quantity the chart shows" -- "$ndgraph" plot "$tmp/none.jsonl" -o "$tmp/x.svg"
printf '{"step": 1, "loss": 2}\0\n' >"$tmp/nul.jsonl"
expect 2 "nul.jsonl:1: a NUL byte" "a binary file" -- "$ndgraph" plot "$tmp/nul.jsonl" -o "$tmp/x.svg"
head -c 200000 /dev/zero | tr '\0' 'x' >"$tmp/long.jsonl"
expect 2 "long.jsonl:1: line longer than" "a line of 200 kB" -- "$ndgraph" plot "$tmp/long.jsonl" -o "$tmp/x.svg"
expect 2 "missing.jsonl: cannot open" "a missing file" -- "$ndgraph" plot "$tmp/missing.jsonl" -o "$tmp/x.svg"
expect 2 "cannot read the metrics file" "a directory" -- "$ndgraph" plot "$tmp" -o "$tmp/x.svg"
expect 2 "usage: ndgraph plot" "no -o" -- "$ndgraph" plot "$tmp/a.jsonl"
cp "$tmp/a.jsonl" "$tmp/keep.jsonl"
expect 2 "the chart would replace it" "the output is an input" -- "$ndgraph" plot "$tmp/a.jsonl" -o "$tmp/a.jsonl"
cmp -s "$tmp/a.jsonl" "$tmp/keep.jsonl"
ok $? "... and the metrics file is unchanged"
expect 1 "nodir/x.svg" "an output folder that does not exist" -- "$ndgraph" plot "$tmp/a.jsonl" -o "$tmp/nodir/x.svg"

# values JSON cannot hold finitely (1e999) are left out, with one note; the
# largest finite ones (1e308 beside -1e308) still give finite coordinates
printf '{"step": 1, "loss": 3}\n{"step": 2, "loss": 1e999}\n{"step": 3, "loss": 2, "lr": 1e308}\n{"step": 4, "lr": -1e308}\n' >"$tmp/inf.jsonl"
expect 0 "note: 1 value was not finite, left out of the chart" "a value of 1e999: one note" -- "$ndgraph" plot "$tmp/inf.jsonl" -o "$tmp/inf.svg"
check "$tmp/inf.svg" "$tmp/inf.jsonl"
ok $? "... and the chart holds the finite values, 1e308 and -1e308 included, at finite coordinates"

# a million lines: a chart of bounded size that keeps the extremes (a spike at step 500000)
awk 'BEGIN { for (i = 1; i <= 1000000; i++) printf "{\"step\": %d, \"loss\": %.6f, \"lr\": 0.001}\n", i, (i == 500000 ? 50 : 3 + 1 / i) }' >"$tmp/big.jsonl"
"$ndgraph" plot "$tmp/big.jsonl" -o "$tmp/big.svg" 2>"$tmp/err" &
wait_or_kill $! 1200
ok $? "a million lines: exit 0 within two minutes"
check "$tmp/big.svg" "$tmp/big.jsonl" && python3 - "$tmp/big.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
l = root.find(".//{http://www.w3.org/2000/svg}polyline[@data-metric='loss']")
pts = [tuple(map(float, p.split(","))) for p in l.get("points").split()]
ys = [y for _, y in pts]
top = min(ys) # the spike
print(f"# {len(pts)} points drawn for 1000000 values, svg of {len(open(sys.argv[1]).read())} bytes")
sys.exit(0 if len(pts) <= 2000 and ys.count(top) == 1 and abs(pts[ys.index(top)][0] - (90 + 0.5 * 840)) < 2 else 1)
PY
ok $? "... at most two points a pixel column, the spike kept where it was"

done_testing
