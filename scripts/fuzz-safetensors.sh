#!/bin/sh
# Fuzzes the checkpoint reader (checkpoint/safetensors.c) for SECONDS
# (default 60); see scripts/fuzz.sh.
exec "$(dirname "$0")/fuzz.sh" safetensors "$@"
