#!/usr/bin/env bash
# The layers flow one way (issue 10, "a one-way house"): every #include of
# the library and of the command line, checked against the rules below.
# A violation is named FILE:LINE with the rule it breaks.
. "${ND_SRCDIR:-.}/tests/tap.sh"
set -f # the rules hold a literal "*"

# FOLDER | FORBIDDEN top-level folders, or "*": all but ALLOWED | ALLOWED
rules='graph | kernels tasks scheduler train cli |
sim | kernels tasks scheduler train cli |
scheduler | tasks train cli |
kernels | tasks train scheduler cli |
common | * | common ndgraph
cli | * | cli ndgraph
configs | cli |
tasks | train cli |
data | cli |
checkpoint | cli |
trace | cli |
train | cli |'

# check ROOT: prints one line per violation, FILE:LINE: FOLDER/ includes PATH
check() {
  local root=$1 folder forbidden allowed
  while IFS='|' read -r folder forbidden allowed; do
    folder=${folder// /} forbidden=$(echo $forbidden)
    [ -d "$root/$folder" ] || continue
    find "$root/$folder" -name '*.[ch]' | sort | while read -r file; do
      grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$file" | while IFS= read -r hit; do
        local line=${hit%%:*} text=${hit#*:} path top bad=0
        case $text in
          *'"'*) path=${text#*\"}; path=${path%%\"*} ;;
          *'<ndgraph/'*) path=${text#*<}; path=${path%%>*} ;;
          *) continue ;; # a system header
        esac
        top=${path%%/*}
        [ "$top" = "$path" ] && top=.
        if [ "$forbidden" = "*" ]; then
          bad=1
          for a in $allowed; do [ "$top" = "$a" ] && bad=0; done
        else
          for f in $forbidden; do [ "$top" = "$f" ] && bad=1; done
        fi
        [ $bad -eq 0 ] || echo "${file#"$root"/}:$line: $folder/ includes $path"
      done
    done
  done <<<"$rules"
}

found=$(check "$srcdir")
[ -z "$found" ]
ok $? "every #include follows the layer rules"
[ -z "$found" ] || printf '%s\n' "$found" | sed 's/^/# /'

# the check itself: a planted violation is caught, and named
mkdir -p "$tmp/graph" "$tmp/cli"
printf '#include <stdio.h>\n#include "graph/ir.h"\n#include "tasks/exec.h"\n' >"$tmp/graph/bad.c"
printf '#include "ndgraph/ndgraph.h"\n#include "trace/model.h"\n' >"$tmp/cli/bad.c"
planted=$(check "$tmp")
[ "$planted" = "graph/bad.c:3: graph/ includes tasks/exec.h
cli/bad.c:2: cli/ includes trace/model.h" ]
ok $? "a planted violation is named FILE:LINE ($(printf '%s' "$planted" | tr '\n' ';'))"

done_testing
