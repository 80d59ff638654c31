#!/bin/sh
# Makes stripped copies of a binary whose symbols live in separate debug files,
# one for each place a debugger looks:
#   debuglink/symfix_debuglink        + debuglink/symfix_debuglink.debug (same dir)
#   debugsub/symfix_debugsub          + debugsub/.debug/symfix_debugsub.debug
#   buildid/symfix_buildid (no link)  + debugroot/.build-id/xx/rest.debug
# Usage: make_debug_variants.sh OBJCOPY STRIP READELF INPUT OUTDIR
set -eu
objcopy=$1 strip=$2 readelf=$3 input=$4 out=$5
rm -rf "$out/debuglink" "$out/debugsub" "$out/buildid" "$out/debugroot"
mkdir -p "$out/debuglink" "$out/debugsub/.debug" "$out/buildid"

split() {  # split BINARY DEBUGFILE [link]
  "$objcopy" --only-keep-debug "$input" "$2"
  cp "$input" "$1"
  "$strip" --strip-all "$1"
  if [ "${3:-}" = link ]; then
    (cd "$(dirname "$1")" && "$objcopy" --add-gnu-debuglink="$2" "$(basename "$1")")
  fi
}

split "$out/debuglink/symfix_debuglink" "$out/debuglink/symfix_debuglink.debug" link
split "$out/debugsub/symfix_debugsub" "$out/debugsub/.debug/symfix_debugsub.debug" link
split "$out/buildid/symfix_buildid" "$out/buildid/symfix_buildid.debug"

build_id=$("$readelf" -n "$input" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
prefix=$(echo "$build_id" | cut -c1-2)
rest=$(echo "$build_id" | cut -c3-)
mkdir -p "$out/debugroot/.build-id/$prefix"
mv "$out/buildid/symfix_buildid.debug" "$out/debugroot/.build-id/$prefix/$rest.debug"
