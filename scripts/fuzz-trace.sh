#!/bin/sh
# Fuzzes the trace reader and summary (trace/reader.c, trace/summary.c) for SECONDS
# (default 60); see scripts/fuzz.sh.
exec "$(dirname "$0")/fuzz.sh" trace "$@"
