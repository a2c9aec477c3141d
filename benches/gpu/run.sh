#!/bin/bash
# vkshmem on an NVIDIA GPU in one device call (see README.md). Every stage has a
# timeout inside one deadline; the raw output lands in /tmp/r, tarred into
# $OUT/results.tgz after each stage (so a call cut short still returns what
# ran), with $OUT/summary.txt the short table.
# Usage (device machine, repo root): bash .gpu/run.sh DEADLINE_SECONDS
set -u
T0=$(date +%s); DL=$((T0 + ${1:-420}))
if [ -e /usr/local/nvidia ]; then
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export XDG_CACHE_HOME=/tmp/cache
R=/tmp/r; rm -rf $R; mkdir -p $R; B=.gpu
SUM=$R/summary.txt; : > $SUM
log() { echo "$*" | tee -a $SUM; }
# st NAME SECS CMD...: CMD with a timeout that stays inside the deadline.
st() {
  local name=$1 secs=$2; shift 2
  local left=$((DL - $(date +%s) - 15))
  [ $left -lt 10 ] && { log "SKIP $name (no time)"; return; }
  [ $secs -gt $left ] && secs=$left
  local t=$(date +%s)
  timeout -k 5 $secs bash -c '"$@"' _ "$@" > $R/$name.txt 2>&1; local rc=$?
  log "STAGE $name rc=$rc $(( $(date +%s) - t ))s"
  (cd /tmp && tar czf $OUT/results.tgz r); cp $SUM $OUT/
}
nvidia-smi > $R/nvidia-smi.txt 2>&1; head -12 $R/nvidia-smi.txt | tail -4 >> $SUM
dmesg -c > /dev/null 2>&1
run() { local n=$1 heap=$2; shift 2; VKSHMEM_SYMMETRIC_SIZE=$heap $B/vkshmrun -n $n --wait-timeout 30 $B/vkshmem-bench "$@"; }
export -f run; export B
C=broadcast,collect,fcollect,alltoall,alltoalls,reduce
st torch 30 python3 $B/torch_copy.py
# Correctness first: every host collective, checked, 2 and 3 PEs.
st check-2pe 40 run 2 1G --collective $C,barrier,sync --check --min-bytes 8 --max-bytes 16M --csv $R/check-2pe.csv
st check-3pe 30 run 3 1G --collective $C --check --min-bytes 8 --max-bytes 16M --step-factor 8 --csv $R/check-3pe.csv
# busbw against size: rows whose objects pass the heap's first 4 GiB are
# skipped and listed (collectives address 4 GiB).
st host-2pe 60 run 2 6G --collective $C --min-bytes 1M --max-bytes 1G --csv $R/host-2pe.csv
st host-4pe 60 run 4 6G --collective $C --min-bytes 1M --max-bytes 512M --csv $R/host-4pe.csv
st host-8pe 60 run 8 6G --collective $C --min-bytes 1M --max-bytes 256M --csv $R/host-8pe.csv
# Device forms on one PE (across processes they are refused on NVIDIA).
st dev-1pe 30 run 1 2G --collective barrier,broadcast,reduce,fcollect,alltoall --scope thread,work_group,work_groups --min-bytes 8 --max-bytes 64M --step-factor 8 --check --csv $R/dev-1pe.csv
# Polling the fence before blocking (VKSHMEM_FENCE_SPIN_US): the floors'
# empty submit and small host calls, 1 and 2 PEs, interleaved.
for sp in 0 50 0 50; do
  for n in 1 2; do
    VKSHMEM_FENCE_SPIN_US=$sp st spin$sp-${n}pe-$RANDOM 15 run $n 1G --collective broadcast,reduce --min-bytes 8 --max-bytes 1M --step-factor 16 --iters 50
  done
done
# Reductions by type, 2 PEs, checked.
for t in int8 int16 int64 double float16 bfloat16; do
  st red-$t 15 run 2 2G --collective reduce --type $t --min-bytes 4M --max-bytes 64M --check --csv $R/red-$t.csv
done
dmesg 2>/dev/null | grep -i -E 'xid|nvrm' | head -5 >> $SUM
log "total $(( $(date +%s) - T0 ))s"
for f in $R/*.csv; do
  awk -F, -v t=$(basename $f .csv) 'NR>1 && ($7>=67108864 || $7<=8) {printf "%s %s %s %s %s %.0fus %.1fGB/s %.0f%% w%s\n", t,$1,$2,$3,$7,$9,$13,$14,$16}' $f
done >> $SUM
grep -h -i -E '^# skipped|error|panic|timed out' $R/*.txt | sort | uniq -c | head -20 >> $SUM
grep -H '^# floors' $R/spin*.txt | sed 's/(read + write).*//' >> $SUM
(cd /tmp && tar czf $OUT/results.tgz r); cp $SUM $OUT/
cat $SUM
