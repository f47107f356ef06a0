#!/bin/sh
# Generates ./configure from configure.ac (autoconf, automake, libtool).
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force
