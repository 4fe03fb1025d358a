#!/usr/bin/env bash
# Measures `cuckoo dedup` against awk '!seen[$0]++' and sort -u on
# URL-like lines (about 54 bytes, 30 % repeats), as docs/dedup-benchmark.md
# reports. Run from the repository root:
#
#   bash internal/tools/dedupbench/run.sh            # 3 million lines, 5 runs each
#   N=1000000 RUNS=3 bash internal/tools/dedupbench/run.sh
#
# It needs GNU time (/usr/bin/time; Debian package "time"). Runs are
# interleaved (cuckoo, awk, sort, cuckoo, …) so that the noise of a shared
# machine falls on all tools alike; it prints the median wall time and
# peak RSS of each, the ratios, and checks the outputs against awk's.
set -euo pipefail

N=${N:-3000000}
RUNS=${RUNS:-5}
DIR=${DIR:-/tmp/cuckoo-dedup-bench}
mkdir -p "$DIR"

if [ ! -x /usr/bin/time ]; then
  echo "needs GNU time: apt-get install time" >&2
  exit 1
fi

go build -o "$DIR/cuckoo" ./cmd/cuckoo
go run ./internal/tools/genurls -n "$N" -repeat 0.3 -seed 1 > "$DIR/urls.txt"
IN="$DIR/urls.txt"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(go version | cut -d' ' -f3-)"
echo "input:   $(wc -l < "$IN") lines, $(stat -c %s "$IN") bytes, $(sort -u "$IN" | wc -l) distinct"
echo "awk:     $(readlink -f "$(command -v awk)"); sort: $(sort --version | head -1); locale: ${LC_ALL:-${LANG:-unset}}"
cat "$IN" > /dev/null # warm the page cache

# measure NAME CMD...: one run, appending "wall-seconds peak-KiB cpu-seconds"
# to $DIR/NAME.times (cpu = user + system, which a busy machine inflates
# less than the wall time)
measure() {
  local name=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o "$DIR/$name.t" "$@" > "$DIR/$name.out"
  awk '{print $1, $2, $3 + $4}' "$DIR/$name.t" >> "$DIR/$name.times"
}

rm -f "$DIR"/*.times
for _ in $(seq "$RUNS"); do
  measure cuckoo "$DIR/cuckoo" dedup "$IN"
  measure awk awk '!seen[$0]++' "$IN"
  measure sort sort -u "$IN"
  measure cuckoo-exact "$DIR/cuckoo" dedup --fpr 1e-7 "$IN"
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v c="$2" '{print $c}' "$DIR/$1.times" | median; }

printf '\n| tool | median wall (s) | median CPU (s) | median peak RSS (MiB) | wall times of the runs (s) |\n|---|---:|---:|---:|---|\n'
for t in cuckoo cuckoo-exact awk sort; do
  printf '| %s | %.2f | %.2f | %.1f | %s|\n' "$t" "$(col "$t" 1)" "$(col "$t" 3)" "$(col "$t" 2 | awk '{print $1/1024}')" \
    "$(awk '{printf "%s ", $1}' "$DIR/$t.times")"
done
c=$(col cuckoo 1); a=$(col awk 1); s=$(col sort 1)
cc=$(col cuckoo 3); ac=$(col awk 3); sc=$(col sort 3)
cm=$(col cuckoo 2); am=$(col awk 2)
echo
awk -v c="$c" -v a="$a" -v s="$s" -v cc="$cc" -v ac="$ac" -v sc="$sc" -v cm="$cm" -v am="$am" 'BEGIN {
  printf "wall time: cuckoo dedup is %.1fx faster than awk and %.1fx faster than sort -u\n", a/c, s/c
  printf "CPU time:  cuckoo dedup is %.1fx less than awk and %.1fx less than sort -u\n", ac/cc, sc/cc
  printf "memory:    cuckoo dedup takes 1/%.0f of awk'"'"'s peak RSS\n", am/cm }'

# Output checks: default rate = awk's output less a few false positives;
# --fpr 1e-7 = awk's output exactly.
missing=$(( $(wc -l < "$DIR/awk.out") - $(wc -l < "$DIR/cuckoo.out") ))
echo "default --fpr 0.0001: $(wc -l < "$DIR/cuckoo.out") lines out, $missing fewer than awk (false positives; --stats shows the expected number)"
"$DIR/cuckoo" dedup --stats "$IN" 2>&1 >/dev/null | grep expected || true
if cmp -s "$DIR/cuckoo-exact.out" "$DIR/awk.out"; then
  echo "--fpr 1e-7: output identical to awk's"
else
  echo "--fpr 1e-7: output DIFFERS from awk's"
fi
