#!/usr/bin/env bash
# Measures `cuckoo dedup --exact` against awk '!seen[$0]++' and sort -u on
# URL-like lines (about 54 bytes, 30 % repeats): wall time, CPU time and
# peak RSS (GNU time), medians of interleaved runs, and checks that the
# output equals awk's. Run from the repository root:
#
#   bash bench/storebench/dedup.sh                  # 3 million lines, 3 runs each
#   N=1000000 RUNS=5 bash bench/storebench/dedup.sh
#
# Needs GNU time (/usr/bin/time; Debian package "time").
set -euo pipefail

N=${N:-3000000}
RUNS=${RUNS:-3}
DIR=${DIR:-/tmp/cuckoo-exact-bench}
mkdir -p "$DIR"
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 1; }

go build -o "$DIR/cuckoo" ./cmd/cuckoo
[ -s "$DIR/urls-$N.txt" ] || go run ./internal/tools/genurls -n "$N" -repeat 0.3 -seed 1 > "$DIR/urls-$N.txt"
IN="$DIR/urls-$N.txt"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(go version | cut -d' ' -f3-)"
echo "input:   $(wc -l < "$IN") lines, $(stat -c %s "$IN") bytes, $(sort -u "$IN" | wc -l) distinct"
echo "awk:     $(readlink -f "$(command -v awk)"); sort: $(sort --version | head -1)"
cat "$IN" > /dev/null

measure() {
  local name=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o "$DIR/$name.t" "$@" > "$DIR/$name.out"
  awk '{print $1, $2, $3 + $4}' "$DIR/$name.t" >> "$DIR/$name.times"
}
rm -f "$DIR"/*.times
for _ in $(seq "$RUNS"); do
  measure exact "$DIR/cuckoo" dedup --exact "$IN"
  measure awk awk '!seen[$0]++' "$IN"
  measure sort sort -u "$IN"
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v c="$2" '{print $c}' "$DIR/$1.times" | median; }
printf '\n| tool | median wall (s) | median CPU (s) | median peak RSS (MiB) | wall times of the runs (s) |\n|---|---:|---:|---:|---|\n'
for t in exact awk sort; do
  label=$t; [ "$t" = exact ] && label="cuckoo dedup --exact"; [ "$t" = sort ] && label="sort -u"
  printf '| %s | %.2f | %.2f | %.1f | %s|\n' "$label" "$(col "$t" 1)" "$(col "$t" 3)" "$(col "$t" 2 | awk '{print $1/1024}')" \
    "$(awk '{printf "%s ", $1}' "$DIR/$t.times")"
done
awk -v c="$(col exact 1)" -v a="$(col awk 1)" -v s="$(col sort 1)" -v cm="$(col exact 2)" -v am="$(col awk 2)" -v sm="$(col sort 2)" 'BEGIN {
  printf "\nwall time: awk / exact = %.2f, sort -u / exact = %.2f; peak RSS: awk / exact = %.2f, sort -u / exact = %.2f\n", a/c, s/c, am/cm, sm/cm }'
if cmp -s "$DIR/exact.out" "$DIR/awk.out"; then echo "output identical to awk's"; else echo "output DIFFERS from awk's"; exit 1; fi
