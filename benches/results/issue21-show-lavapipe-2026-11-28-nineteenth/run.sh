#!/bin/sh
# Issue 21's lavapipe Show three times over (nineteenth session): the
# fifteenth session's script (every host collective at 4 MiB on 2, 4 and 8
# PEs, the reductions over every type, in place, offset 4, the device forms)
# run in three rounds one after another, then each row's median roofline_pct
# over the rounds (summary.py). On a shared VM one round's rows move by tens
# of points (see README.md), so a row's bar is judged on the median.
# Usage: VKSHMEM_SYMMETRIC_SIZE=256M [BIN=target/release] run.sh OUTDIR
set -e
out=$1
here=$(dirname "$0")
for r in 1 2 3; do
  start=$(date +%s)
  sh "$here/../issue21-show-lavapipe-2026-11-27-fifteenth/run.sh" "$out/r$r" > "$out/r$r.summary"
  echo "round $r: $(( $(date +%s) - start )) s" >> "$out/time.txt"
done
python3 "$here/summary.py" "$out"/r1.summary "$out"/r2.summary "$out"/r3.summary > "$out/median.txt"
cat "$out/median.txt"
