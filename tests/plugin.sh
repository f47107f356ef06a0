#!/bin/sh
# Kernel plugins from the command line: plan's kernels section, kernel-check
# on the example plugin and on a broken one, and one clear line with exit
# status 2 for every kind of bad plugin, before any training. Speaks TAP.
B=${ND_BUILDDIR:-.}
S=${ND_SRCDIR:-.}
ND="$B/ndgraph"
EX="$B/examples/plugins/.libs/libexample.so"
BAD="$B/tests/plugins/.libs"
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
TINY="--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=4 --set model.seq_len=16 --set model.vocab_size=256 --set runtime.workers=1 --set train.eval_every=0 --set train.save_dir="
n=0
fails=0
ok() { # ok COND-STATUS NAME
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
# expect STATUS PATTERN NAME -- command...: status and a line of stderr matching PATTERN (grep -E)
expect() {
  st=$1 pat=$2 name=$3
  shift 4
  "$@" >"$TMP/out" 2>"$TMP/err"
  got=$?
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq "$st" ] && grep -Eq -- "$pat" "$TMP/err" && [ "$lines" -eq 1 ]; then r=0; else r=1; fi
  [ $r -eq 0 ] || { echo "# exit $got (want $st), stderr:"; sed 's/^/#   /' "$TMP/err"; }
  ok $r "$name"
}

# ---- plan shows the implementation of each kind
$ND plan $TINY --set "kernels.plugins=[$EX]" --set "kernels.override={matmul_fwd: blocked}" \
  --set model.activation=silu >"$TMP/plan" 2>&1
st=$?
grep -q "^kernels:" "$TMP/plan" && grep -q "^  matmul_fwd: blocked ($EX)$" "$TMP/plan" &&
  grep -q "^  matmul_bwd_input: builtin$" "$TMP/plan" && grep -q "^  activation_fwd: silu ($EX)$" "$TMP/plan"
ok $(( st != 0 || $? != 0 )) "plan lists kernels: matmul_fwd: blocked (plugin), matmul_bwd_input: builtin, activation_fwd: silu"
$ND plan $TINY >"$TMP/plan" 2>&1
grep -q "^  matmul_fwd: builtin$" "$TMP/plan" && grep -q "^  activation_fwd: gelu$" "$TMP/plan"
ok $? "plan without plugins: matmul_fwd: builtin, activation_fwd: gelu"

# ---- kernel-check
$ND kernel-check "$EX" silu >"$TMP/out" 2>&1
st=$?
grep -q "kernel-check silu .*PASS" "$TMP/out" && grep -q "backward (n 1000): rel err .* vs finite differences: ok" "$TMP/out"
ok $(( st != 0 || $? != 0 )) "kernel-check passes the example SiLU (exit $st)"
$ND kernel-check "$EX" blocked >"$TMP/out" 2>&1
st=$?
grep -q "kernel-check blocked .*PASS" "$TMP/out" && [ "$(grep -c 'vs fp64: ok' "$TMP/out")" -eq 12 ]
ok $(( st != 0 || $? != 0 )) "kernel-check passes the blocked GEMM on 3 kinds x 4 shapes (exit $st)"
$ND kernel-check "$BAD/libbad_backward.so" silu >"$TMP/out" 2>&1
st=$?
grep -q "kernel-check silu .*FAIL" "$TMP/out" && grep -q "backward .*FAIL" "$TMP/out"
ok $(( st != 1 || $? != 0 )) "kernel-check fails a SiLU with a wrong backward (exit $st, want 1)"
$ND kernel-check "$BAD/libbad_sloppy.so" sloppy >"$TMP/out" 2>&1
st=$?
grep -q "kernel-check sloppy .*FAIL" "$TMP/out" && [ "$(grep -c '^residual_fwd sloppy (n [0-9]*): rel err 1\.0[0-9]e-03 vs fp64: FAIL$' "$TMP/out")" -eq 3 ]
ok $(( st != 1 || $? != 0 )) "kernel-check fails a residual add 0.1% off the fp64 reference on each of its 3 sizes (exit $st, want 1)"
expect 2 "libexample.so: the plugin registers no activation or kernel named 'nope'" \
  "kernel-check: an unknown name is exit 2" -- $ND kernel-check "$EX" nope
expect 2 "libbad_fail.so: kernel 'failing' for matmul_fwd returned -7 on a check" \
  "kernel-check: a kernel that returns an error is one line, exit 2" -- $ND kernel-check "$BAD/libbad_fail.so" failing
expect 2 "^ndgraph: a plugin's file name is empty$" \
  "kernel-check: an empty plugin path is refused, not loaded as the program itself" -- $ND kernel-check "" gelu

# ---- bad plugins: one line naming the plugin and the problem, exit 2, no training
printf 'not a library\n' >"$TMP/text.so"
run_bad() { # STATUS PATTERN NAME PLUGIN [--set ...]
  st=$1 pat=$2 name=$3 plugin=$4
  shift 4
  expect "$st" "$pat" "$name" -- $ND run $TINY --set train.steps=1 --set "kernels.plugins=[$plugin]" "$@"
  if grep -q "^step" "$TMP/out"; then ok 1 "$name: no training step ran"; fi
}
run_bad 2 "^ndgraph: $TMP/missing.so: cannot load the plugin: No such file or directory$" "missing file" "$TMP/missing.so"
run_bad 2 "^ndgraph: $TMP/text.so: not a loadable shared object: .+" "not a shared object" "$TMP/text.so"
# dlopen maps a truncated object and faults (SIGBUS) on the first page past
# its end; every cut into the loaded segments is refused (here the first
# 12 KB; past them come the section tables, which loading does not read)
size=$(wc -c <"$EX")
for cut in 1000 3000 8000; do
  head -c "$cut" "$EX" >"$TMP/cut.so"
  run_bad 2 "^ndgraph: $TMP/cut.so: not a loadable shared object: truncated \($cut bytes, .+\)$" \
    "truncated to $cut of $size bytes" "$TMP/cut.so"
done
expect 2 "^ndgraph: $TMP/cut.so: not a loadable shared object: truncated" "kernel-check: a truncated plugin" -- \
  $ND kernel-check "$TMP/cut.so" silu
expect 2 "^ndgraph: $TMP/cut.so: not a loadable shared object: truncated" "plan: a truncated plugin" -- \
  $ND plan $TINY --set "kernels.plugins=[$TMP/cut.so]"
run_bad 2 "libno_entry.so: no entry point ndgraph_plugin_init" "missing entry point" "$BAD/libno_entry.so"
run_bad 2 "libdata_entry.so: ndgraph_plugin_init is not a function" "an entry point that is data" "$BAD/libdata_entry.so"
expect 2 "libdata_entry.so: ndgraph_plugin_init is not a function" "kernel-check: an entry point that is data" -- \
  $ND kernel-check "$BAD/libdata_entry.so" silu
expect 2 "libdata_entry.so: ndgraph_plugin_init is not a function" "plan: an entry point that is data" -- \
  $ND plan $TINY --set "kernels.plugins=[$BAD/libdata_entry.so]"
run_bad 2 "libbad_abi.so: kernel ABI version mismatch: the plugin refuses ABI 1" "ABI version mismatch" "$BAD/libbad_abi.so"
run_bad 2 "libold_attention.so: kernel 'old' for attention_fwd: built against ABI 2, whose attention kept the \(T, T\) probabilities" \
  "an attention kernel of ABI 2 (before fused attention)" "$BAD/libold_attention.so"
run_bad 2 "libbad_kind.so: unknown task kind 'matmul_fw' \(kernel 'fast'\)$" "unknown task kind" "$BAD/libbad_kind.so"
run_bad 2 "libbad_dup.so: duplicate kernel name 'fast' for matmul_fwd \(already from .*libbad_dup.so\)$" \
  "duplicate kernel name" "$BAD/libbad_dup.so"
run_bad 2 "libbad_fail.so: kernel 'failing' for matmul_fwd returned -7 on a validation call$" \
  "a kernel that returns an error, at the validation call before training" "$BAD/libbad_fail.so" \
  --set "kernels.override={matmul_fwd: failing}"
expect 2 "libexample.so: duplicate activation name 'silu' \(already from .*libexample.so\)$" \
  "the same plugin twice: duplicate name" -- $ND plan $TINY --set "kernels.plugins=[$EX, $EX]"
expect 2 "kernels.override: no kernel 'fast' for matmul_fwd \(available: builtin, blocked\)$" \
  "override naming no loaded kernel" -- $ND plan $TINY --set "kernels.plugins=[$EX]" --set "kernels.override={matmul_fwd: fast}"
expect 2 "kernels.override: unknown task kind 'matmul_fw'$" \
  "override of an unknown task kind" -- $ND plan $TINY --set "kernels.override={matmul_fw: blocked}"
expect 2 "model.activation: unknown activation 'silu' \(available: gelu; plugins add others\)$" \
  "an activation no plugin adds" -- $ND run $TINY --set train.steps=1 --set model.activation=silu

# ---- training with the plugin from the command line
$ND run $TINY --set train.steps=2 --set "kernels.plugins=[$EX]" --set model.activation=silu \
  --set "kernels.override={matmul_fwd: blocked}" >"$TMP/out" 2>&1
st=$?
grep -q "^step     2 | loss" "$TMP/out" && grep -q "kernels: matmul_fwd=blocked" "$TMP/out"
ok $(( st != 0 || $? != 0 )) "run trains with the plugin and names its kernels (exit $st)"
$ND run $TINY --set train.steps=1 --set "kernels.plugins=[$EX]" --set model.activation=silu \
  --set "kernels.override={matmul_fwd: blocked}" --trace "$TMP/trace.json" >"$TMP/out" 2>&1
st=$?
# each task kind's events name its implementation, and the plugin's where it has one
impl() { # KIND: the distinct "impl plugin" pairs of KIND's events
  tr '{' '\n' <"$TMP/trace.json" | grep "\"kind\":\"$1\"" |
    sed -n 's/.*"impl":"\([^"]*\)"\(,"plugin":"\([^"]*\)"\)\{0,1\}.*/\1 \3/p' | sort -u
}
[ "$(impl matmul_fwd)" = "blocked $EX" ] && [ "$(impl matmul_bwd_input)" = "builtin " ] &&
  [ "$(impl activation_fwd)" = "silu $EX" ] && [ "$(impl adamw)" = "builtin " ]
ok $(( st != 0 || $? != 0 )) "the trace names each kind's implementation: matmul_fwd blocked and silu from the plugin, the rest builtin"

# a plugin is a file: a name without a slash is in the current directory,
# not on the library search path
cp "$EX" "$TMP/libhere.so"
ND_ABS=$(cd "$(dirname "$ND")" && pwd)/$(basename "$ND")
(cd "$TMP" && "$ND_ABS" kernel-check libhere.so silu) >"$TMP/out" 2>&1
st=$?
grep -q "kernel-check silu (libhere.so): PASS" "$TMP/out"
ok $(( st != 0 || $? != 0 )) "a plugin named without a directory is loaded from the current one (exit $st)"
(cd "$TMP" && "$ND_ABS" kernel-check libnowhere.so silu) >"$TMP/out" 2>"$TMP/err"
st=$?
grep -q "^ndgraph: libnowhere.so: cannot load the plugin: No such file or directory$" "$TMP/err"
ok $(( st != 2 || $? != 0 )) "a missing plugin without a directory: the file's own error (exit $st)"

echo "1..$n"
[ $fails -eq 0 ]
