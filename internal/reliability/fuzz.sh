#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each and prints a
# Markdown table of executions and crashes (a crash includes a fail-open
# result: the targets assert that nothing invalid is allowed or written).
# Usage: fuzz.sh FUZZTIME [TABLE_FILE]. Seed corpora come from testdata/
# (each target's f.Add seeds and testdata/fuzz/<Target>/).
set -uo pipefail
fuzztime=${1:-30s}
out=${2:-}
go=${GO:-go}
parallel=${FUZZPARALLEL:-1}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

rows=""
total_execs=0
total_crashes=0
targets=0
# "go test -list" prints each package's fuzz targets, then "ok <package>".
while read -r pkg names; do
  for name in $names; do
    targets=$((targets + 1))
    echo "== $pkg $name ($fuzztime)" >&2
    if $go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "$parallel" "$pkg" >"$log" 2>&1; then
      crashes=0
    else
      crashes=1
      grep -E -- '--- FAIL|Failing input|testdata/fuzz' "$log" >&2 || tail -20 "$log" >&2
    fi
    execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
    execs=${execs:-0}
    total_execs=$((total_execs + execs))
    total_crashes=$((total_crashes + crashes))
    rows+="| \`${pkg#github.com/backflow-dev/backflow/}\` | $name | $execs | $crashes |"$'\n'
    echo "FIGURE case=5 name=fuzz target=$name executions=$execs crashes=$crashes" >&2
  done
done < <($go test -list '^Fuzz' ./... 2>/dev/null | awk '/^Fuzz/ {names = names " " $1} /^ok/ {if (names != "") print $2 names; names = ""}')

table="| package | fuzz target | executions ($fuzztime) | crashes |
| --- | --- | --- | --- |
${rows}| **all** | $targets targets | $total_execs | $total_crashes |"
echo "$table"
if [ -n "$out" ]; then
  printf '%s\n' "$table" >"$out"
fi
echo "FIGURE case=5 name=fuzzing targets=$targets executions=$total_execs crashes=$total_crashes" >&2
if [ "$targets" -eq 0 ]; then
  echo "no fuzz target found: does the module build?" >&2
  exit 1
fi
[ "$total_crashes" -eq 0 ]
