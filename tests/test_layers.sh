#!/usr/bin/env bash
# The layers flow one way (issue 10, "a one-way house"): every #include of
# the library and of the command line, checked against the rules below,
# and inside kernels/ each backend's folder its own.
# A violation is named FILE:LINE with the rule it breaks.
. "${ND_SRCDIR:-.}/tests/tap.sh"
set -f # the rules hold a literal "*"

# FOLDER | FORBIDDEN top-level folders, or "*": all but ALLOWED | ALLOWED
rules='graph | kernels tasks scheduler train cli |
sim | kernels tasks scheduler train cli |
placement | kernels tasks scheduler sim train cli |
scheduler | tasks train cli |
kernels | tasks train scheduler cli |
common | * | common ndgraph
text | * | text common ndgraph
cli | * | cli ndgraph
configs | cli |
tasks | train cli |
data | cli |
checkpoint | cli |
trace | cli |
metrics | * | common metrics ndgraph
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

# Inside kernels/: a backend's folder (kernels/cpu/, kernels/opencl/,
# kernels/cuda/) is that backend's own. Only kernels/ includes from it, and
# no backend from another's; the rest of the library sees kernels/*.h.
# check_backends ROOT: one line per violation, FILE:LINE: ... includes PATH
check_backends() {
  local root=$1 folders
  # the library's and the command line's folders: those the rules name
  folders=$(for f in $(cut -d'|' -f1 <<<"$rules"); do [ -d "$root/$f" ] && echo "$root/$f"; done)
  find $folders -name '*.[ch]' | sort | while read -r file; do
    local rel=${file#"$root"/}
    grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"kernels/[^/"]+/' "$file" | while IFS= read -r hit; do
      local line=${hit%%:*} path=${hit#*\"}
      path=${path%%\"*}
      local sub=${path#kernels/}
      sub=${sub%%/*}
      case $rel in
        kernels/"$sub"/*) ;;
        kernels/*/*) echo "$rel:$line: a backend includes another backend's $path" ;;
        kernels/*) ;;
        *) echo "$rel:$line: only kernels/ includes $path" ;;
      esac
    done
  done
}

found=$( (check "$srcdir"; check_backends "$srcdir") )
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
mkdir -p "$tmp/scheduler" "$tmp/kernels/cuda" "$tmp/kernels/cpu"
printf '#include "kernels/backend.h"\n#include "kernels/cpu/kernels.h"\n' >"$tmp/scheduler/bad.c"
printf '#include "kernels/cuda/cuda.h"\n#include "kernels/cpu/kernels.h"\n' >"$tmp/kernels/cuda/bad.c"
printf '#include "kernels/cpu/kernels.h"\n' >"$tmp/kernels/cpu/good.c"
planted=$(check_backends "$tmp")
[ "$planted" = "kernels/cuda/bad.c:2: a backend includes another backend's kernels/cpu/kernels.h
scheduler/bad.c:2: only kernels/ includes kernels/cpu/kernels.h" ]
ok $? "a planted include of a backend's folder is named FILE:LINE ($(printf '%s' "$planted" | tr '\n' ';'))"

done_testing
