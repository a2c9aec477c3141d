#!/bin/bash
# Second A/B, six interleaved rounds at 1 and 4 MiB on 2, 4 and 8 PEs:
# broadcast, fcollect and collect, OLD (dir "old": pulls) against PUSH (dir
# "push": broadcast and gathers pushed). summary.py OUT old push.
# Usage: OLD=dir PUSH=dir run-1m-4m.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4 5 6; do for n in 2 4 8; do for c in broadcast fcollect collect; do for v in old push; do
  dir=$OLD; [ $v = push ] && dir=$PUSH
  timeout 120 "$dir/vkshmrun" -n $n "$dir/vkshmem-bench" --collective $c --min-bytes 1M --max-bytes 4M --step-factor 4 --iters 30 --no-roofline --csv "$out/$v-$n-$c-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $c
done; done; done; done
