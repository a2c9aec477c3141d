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
# One submitter per device (VKSHMEM_SUBMIT: auto is leader on NVIDIA) against
# each PE submitting its own part, interleaved: 2 and 4 PEs, 8 B to 64 MiB.
for mode in each leader each leader; do
  VKSHMEM_SUBMIT=$mode st submit-$mode-2pe-$RANDOM 20 run 2 2G --collective $C --min-bytes 8 --max-bytes 64M --step-factor 8 --iters 20 --check
done
for mode in each leader; do
  VKSHMEM_SUBMIT=$mode st submit-$mode-4pe 25 run 4 2G --collective $C --min-bytes 8 --max-bytes 64M --step-factor 8 --iters 20 --check
done
# busbw against size up to 1 GiB (host collectives on aligned objects bind
# the whole heap; rows that do not fit the heap are skipped and listed).
st host-2pe 60 run 2 6G --collective $C --min-bytes 1M --max-bytes 1G --step-factor 4 --csv $R/host-2pe.csv
st host-4pe 60 run 4 10G --collective $C --min-bytes 1M --max-bytes 1G --step-factor 4 --csv $R/host-4pe.csv
st host-8pe 60 run 8 10G --collective $C --min-bytes 1M --max-bytes 512M --step-factor 4 --csv $R/host-8pe.csv
# Polling the fence before blocking (VKSHMEM_FENCE_SPIN_US): the floors'
# empty submit and small host calls, 2 PEs.
for sp in 0 50; do
  VKSHMEM_FENCE_SPIN_US=$sp st spin$sp-2pe 15 run 2 1G --collective broadcast,reduce --min-bytes 8 --max-bytes 1M --step-factor 16 --iters 50
done
# Reductions over the other types at 64 MiB, 2 PEs, checked.
for t in int8 double bfloat16; do
  st red-$t 15 run 2 2G --collective reduce --type $t --min-bytes 64M --max-bytes 64M --check --csv $R/red-$t.csv
done
dmesg 2>/dev/null | grep -i -E 'xid|nvrm' | head -5 >> $SUM
log "total $(( $(date +%s) - T0 ))s"
for f in $R/*.csv; do
  awk -F, -v t=$(basename $f .csv) 'NR>1 && ($7>=67108864 || $7<=8) {printf "%s %s %s %s %s %.0fus %.1fGB/s %.0f%% w%s\n", t,$1,$2,$3,$7,$9,$13,$14,$16}' $f
done >> $SUM
grep -h -i -E '^# skipped|error|panic|timed out' $R/*.txt | sort | uniq -c | head -20 >> $SUM
grep -H '^# floors' $R/spin*.txt | sed 's/(read + write).*//' >> $SUM
# each vs leader: median us of every row at 8 B, 64 KiB and 64 MiB.
for f in $R/submit-*.txt; do
  awk -v t=$(basename $f .txt) '$2=="host" && ($6==8 || $6==65536 || $6==67108864) {printf "%s %s %s %s\n", t, $1, $6, $7}' $f
done >> $SUM
(cd /tmp && tar czf $OUT/results.tgz r); cp $SUM $OUT/
cat $SUM
