#!/bin/bash
# vkshmem on an NVIDIA GPU in one device call (see README.md). Every stage has a
# timeout inside one deadline; the raw output lands in /tmp/r (each line of a
# stage's output prefixed with the time it was printed), tarred into
# $OUT/results.tgz after each stage (so a call cut short still returns what
# ran), with $OUT/summary.txt the short table.
# Usage (device machine, repo root):
#   bash .gpu/run.sh DEADLINE_SECONDS [torch|-] [LIST[,LIST...]]
# torch adds torch's device copy (the roofline). LISTs run in the order given
# (default standard): standard, checks, sweep, phases, ab, all, bimodal,
# mixes, old-new, old-new-small, old-new-all, unit, ucc, reuse, word; each is
# described above its function below and in README.md.
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
# Each line prefixed with the seconds since the stage began.
stamp() {
  local t0=${EPOCHREALTIME/./} d
  while IFS= read -r l; do
    d=$(( ${EPOCHREALTIME/./} - t0 )); printf '%5d.%03d %s\n' $((d / 1000000)) $((d / 1000 % 1000)) "$l"
  done
}
# st NAME SECS CMD...: CMD with a timeout that stays inside the deadline.
st() {
  local name=$1 secs=$2; shift 2
  local left=$((DL - $(date +%s) - 15))
  [ $left -lt 10 ] && { log "SKIP $name (no time)"; return; }
  [ $secs -gt $left ] && secs=$left
  local t=$(date +%s)
  timeout -k 5 $secs bash -c '"$@"' _ "$@" 2>&1 | stamp > $R/$name.txt; local rc=${PIPESTATUS[0]}
  log "STAGE $name rc=$rc $(( $(date +%s) - t ))s"
  dmesg 2>/dev/null | grep -i -E 'xid' | tail -2 >> $SUM
  (cd /tmp && tar czf $OUT/results.tgz r); cp $SUM $OUT/
}
nvidia-smi > $R/nvidia-smi.txt 2>&1; head -12 $R/nvidia-smi.txt | tail -4 >> $SUM
dmesg -c > /dev/null 2>&1
# The GPU's clocks, power and throttle reasons every 250 ms (a GPU lowers its
# clocks while idle, and rows timed before they come back run slower).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 250 > $R/clocks.csv 2>&1 &
CLOCKS=$!
run() { local n=$1 heap=$2; shift 2; VKSHMEM_SYMMETRIC_SIZE=$heap ${RUNNER:-$B/vkshmrun} -n $n --wait-timeout 30 ${BENCH:-$B/vkshmem-bench} "$@"; }
export -f run; export B
C=broadcast,collect,fcollect,alltoall,alltoalls,reduce
Q="--no-roofline --iters 10 --warmup 2"
[ "${2:-}" = torch ] && st torch 30 python3 $B/torch_copy.py
# Copy kernel shapes on one PE (GPU timestamps): the library's wide copy
# against plain copies over workgroup sizes, counts and vec4s per step.
if [ "${3:-}" = mixes ]; then
  st nvcc 60 nvcc -O3 -o /tmp/mixes $B/mixes.cu
  st mixes 60 /tmp/mixes 256 1024
fi
[ "${3:-}" != bimodal ] && st copy-shapes 60 env VKSHMEM_SYMMETRIC_SIZE=3G $B/vkshmrun -n 1 $B/copy_shapes 64 256 1024
# The wide copies' and pushes' workgroup (VKSHMEM_WIDE_WORKGROUP): 64 (the
# old default) against auto (256 on a GPU), interleaved in two
# rounds on 2 and 4 PEs, one on 8 (the reductions, at 64 in both arms since
# then, are the control).
ab() {
  for r in 1 2; do
    for wg in 64 auto; do
      st wg$wg-2pe-r$r 30 env VKSHMEM_WIDE_WORKGROUP=$wg bash -c "run 2 6G --collective $C --min-bytes 4M --max-bytes 1G --step-factor 4 $Q --csv $R/wg$wg-2pe-r$r.csv"
      st wg$wg-4pe-r$r 40 env VKSHMEM_WIDE_WORKGROUP=$wg bash -c "run 4 10G --collective $C --min-bytes 4M --max-bytes 1G --step-factor 4 $Q --csv $R/wg$wg-4pe-r$r.csv"
    done
  done
  for wg in 64 auto; do
    st wg$wg-8pe 60 env VKSHMEM_WIDE_WORKGROUP=$wg bash -c "run 8 10G --collective $C --min-bytes 4M --max-bytes 512M --step-factor 4 $Q --csv $R/wg$wg-8pe.csv"
  done
  # The heap's size (the GPU's page tables: 4 heaps of 10 GiB against 5),
  # 4 PEs, the pushes that were slow there.
  for h in 5G 10G; do
    st heap$h-4pe 30 run 4 $h --collective broadcast,collect,fcollect --min-bytes 64M --max-bytes 1G --step-factor 4 $Q --csv $R/heap$h-4pe.csv
  done
}
# Some jobs' first rows run slower: timed while the SM clock is still low
# after the idle set-up (benches/RESULTS.md, "H200 clock at job start").
# A warm-up of 500 ms per row against none, alternating, on 4 PEs.
bimodal() {
  local j=0
  for r in 1 2 3; do
    for w in 0 500; do
      j=$((j + 1))
      st bi$j-warm$w 30 run 4 10G --collective broadcast,collect,fcollect --min-bytes 64M --max-bytes 1G --step-factor 4 --no-roofline --iters 5 --warmup 1 --warmup-ms $w --csv $R/bi$j-warm$w.csv
    done
  done
}
# Benches built before a change (.gpu/old/vkshmem-bench, and .gpu/mid/ where
# present) against .gpu/vkshmem-bench, interleaved in two rounds on 2 and 4
# PEs, one on 8 (the old one left out there when mid is present); then the
# new one checked past one piece of the wide path (1.5 GiB broadcast and
# reduce on 2 PEs) and at 256 MiB on 8.
old_new() {
  local vs="old new"; [ -e $B/mid/vkshmem-bench ] && vs="old mid new"
  for r in 1 2; do
    for v in $vs; do
      b=$B/vkshmem-bench; [ $v != new ] && b=$B/$v/vkshmem-bench
      st $v-2pe-r$r 30 env BENCH=$b bash -c "run 2 6G --collective $C --min-bytes 64M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/$v-2pe-r$r.csv"
      st $v-4pe-r$r 40 env BENCH=$b bash -c "run 4 10G --collective $C --min-bytes 64M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/$v-4pe-r$r.csv"
      [ $r = 1 ] && [ "$v $vs" != "old old mid new" ] && st $v-8pe 50 env BENCH=$b bash -c "run 8 10G --collective $C --min-bytes 64M --max-bytes 512M --step-factor 8 $Q --warmup-ms 300 --csv $R/$v-8pe.csv"
    done
  done
  st check-big-2pe 60 run 2 12G --collective broadcast,reduce --check --min-bytes 1536M --max-bytes 1536M --iters 1 --warmup 1 --no-roofline --csv $R/check-big-2pe.csv
  st check-big-8pe 60 run 8 10G --collective $C --check --min-bytes 256M --max-bytes 256M --iters 1 --warmup 1 --no-roofline --csv $R/check-big-8pe.csv
}
# The wide kernels' unit (VKSHMEM_WIDE_UNIT): vec4<u32> (the GPU default)
# against vec2<u64> (llvmpipe's default), the same bench interleaved in two
# rounds on 2 and 4 PEs, one on 8;
# then the u64 kernels checked at a 4-byte offset (their edge launches).
unit() {
  for r in 1 2; do
    for u in u32 u64; do
      st unit$u-2pe-r$r 30 env VKSHMEM_WIDE_UNIT=$u bash -c "run 2 6G --collective $C --min-bytes 64M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/unit$u-2pe-r$r.csv"
      st unit$u-4pe-r$r 40 env VKSHMEM_WIDE_UNIT=$u bash -c "run 4 10G --collective $C --min-bytes 64M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/unit$u-4pe-r$r.csv"
      [ $r = 1 ] && st unit$u-8pe 50 env VKSHMEM_WIDE_UNIT=$u bash -c "run 8 10G --collective $C --min-bytes 64M --max-bytes 512M --step-factor 8 $Q --warmup-ms 300 --csv $R/unit$u-8pe.csv"
    done
  done
  st unitu64-offset4-2pe 25 env VKSHMEM_WIDE_UNIT=u64 bash -c "run 2 2G --collective $C --offset 4 --check --min-bytes 4K --max-bytes 64M --step-factor 16 $Q --csv $R/unitu64-offset4-2pe.csv"
}
# The old bench (.gpu/old/, with its own vkshmrun where present) against the
# new at small and middle sizes, where a call's fixed cost shows: 1, 2 and 4
# PEs, 16 B to 16 MiB, interleaved in two rounds.
# The bench and launcher of arm $1 (old or new) into b and rn.
arm() {
  b=$B/vkshmem-bench; rn=$B/vkshmrun
  if [ $1 = old ]; then b=$B/old/vkshmem-bench; [ -e $B/old/vkshmrun ] && rn=$B/old/vkshmrun; fi
}
# One small-size stage: arm $1, round $2, $3 PEs.
small_stage() {
  local b rn; arm $1
  st $1-small-${3}pe-r$2 30 env BENCH=$b RUNNER=$rn bash -c "run $3 2G --collective broadcast,fcollect,alltoall,reduce --min-bytes 16 --max-bytes 16M --step-factor 16 --no-roofline --iters 50 --warmup 5 --warmup-ms 100 --csv $R/$1-small-${3}pe-r$2.csv"
}
old_new_small() {
  for r in 1 2; do
    for v in old new; do
      for n in 1 2 4; do small_stage $v $r $n; done
    done
  done
}
# The old bench (.gpu/old/, its own vkshmrun where present) against the new,
# interleaved in two rounds, at small and middle sizes on 1-8 PEs and large
# sizes on 2 and 4 PEs (8 in the first round); then the new one checked on 4
# and 8 PEs and its phases on 2, 4 and 8 (for an A/B of the yielding polls
# of the fence and the sync plane, and of the broadcast pushed whole).
old_new_all() {
  for r in 1 2; do
    for v in old new; do
      local b rn; arm $v
      for n in 1 2 4 8; do small_stage $v $r $n; done
      st $v-2pe-r$r 30 env BENCH=$b RUNNER=$rn bash -c "run 2 6G --collective $C --min-bytes 64M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/$v-2pe-r$r.csv"
      st $v-4pe-r$r 40 env BENCH=$b RUNNER=$rn bash -c "run 4 10G --collective $C --min-bytes 64M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/$v-4pe-r$r.csv"
      [ $r = 1 ] && st $v-8pe 50 env BENCH=$b RUNNER=$rn bash -c "run 8 10G --collective $C --min-bytes 64M --max-bytes 512M --step-factor 8 $Q --warmup-ms 300 --csv $R/$v-8pe.csv"
    done
  done
  st check-4pe 40 run 4 2G --collective $C,barrier,sync --check --min-bytes 8 --max-bytes 64M --step-factor 8 $Q --csv $R/check-4pe.csv
  st check-8pe 50 run 8 2G --collective $C --check --min-bytes 8 --max-bytes 32M --step-factor 8 $Q --csv $R/check-8pe.csv
  for n in 2 4 8; do
    st phases-${n}pe 40 run $n 4G --collective broadcast,fcollect,alltoall,reduce --min-bytes 16 --max-bytes 256M --step-factor 16 --no-roofline --iters 20 --warmup 2 --warmup-ms 300 --phases
  done
  # The largest size's phases on 2 and 4 PEs: whether the rows short of 85 %
  # of torch at 1 GiB lose it in the GPU's time or around it (meetings,
  # fence wait).
  st phases-1g-2pe 40 run 2 6G --collective $C --min-bytes 1G --max-bytes 1G --no-roofline --iters 5 --warmup 1 --warmup-ms 300 --phases
  st phases-1g-4pe 60 run 4 10G --collective $C --min-bytes 1G --max-bytes 1G --no-roofline --iters 5 --warmup 1 --warmup-ms 300 --phases
}
# Recorded submissions run again (VKSHMEM_REUSE_RECORDINGS) against every
# submission recorded anew, the same bench
# interleaved in two rounds at small sizes on 2, 4 and 8 PEs; then 1-PE
# phase jobs four times, their fence waits split into launch and signal
# (calibrated timestamps): 1-PE jobs have run in two modes (empty
# submission 13 or 47 us) with the SM clock at full speed in both.
reuse() {
  for r in 1 2; do
    for on in on off; do
      for n in 2 4 8; do
        st reuse$on-small-${n}pe-r$r 30 env VKSHMEM_REUSE_RECORDINGS=$on bash -c "run $n 2G --collective broadcast,fcollect,alltoall,reduce --min-bytes 16 --max-bytes 16M --step-factor 16 --no-roofline --iters 50 --warmup 5 --warmup-ms 100 --csv $R/reuse$on-small-${n}pe-r$r.csv"
      done
    done
  done
  for j in 1 2 3 4; do
    st modes-1pe-j$j 20 run 1 2G --collective broadcast,reduce --min-bytes 16 --max-bytes 1M --step-factor 64 --no-roofline --iters 50 --warmup 5 --warmup-ms 100 --phases
  done
}
# Completion seen by a word in host memory that each submission's last
# command sets (VKSHMEM_COMPLETION=word) against the
# fence alone, the same bench interleaved in two rounds at small sizes on 1,
# 2 and 4 PEs; then each way's phases on 2 PEs (launch and signal).
word() {
  for r in 1 2; do
    for c in fence word; do
      for n in 1 2 4; do
        st $c-small-${n}pe-r$r 30 env VKSHMEM_COMPLETION=$c bash -c "run $n 2G --collective broadcast,fcollect,alltoall,reduce --min-bytes 16 --max-bytes 16M --step-factor 16 --no-roofline --iters 50 --warmup 5 --warmup-ms 100 --csv $R/$c-small-${n}pe-r$r.csv"
      done
    done
  done
  for c in fence word; do
    st phases-$c-2pe 20 env VKSHMEM_COMPLETION=$c bash -c "run 2 2G --collective broadcast,reduce --min-bytes 16 --max-bytes 16M --step-factor 16 --no-roofline --iters 50 --warmup 5 --warmup-ms 100 --phases"
  done
}
# The busbw sweep of standard() with --warmup-ms 300 (the SM clock back up
# before each row's timing), two rounds.
sweep() {
  for r in 1 2; do
    st sweep-2pe-r$r 50 run 2 6G --collective $C --min-bytes 1M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/sweep-2pe-r$r.csv
    st sweep-4pe-r$r 50 run 4 10G --collective $C --min-bytes 1M --max-bytes 1G --step-factor 4 $Q --warmup-ms 300 --csv $R/sweep-4pe-r$r.csv
    st sweep-8pe-r$r 60 run 8 10G --collective $C --min-bytes 1M --max-bytes 512M --step-factor 4 $Q --warmup-ms 300 --csv $R/sweep-8pe-r$r.csv
  done
}
# Where a host call's time goes (vkshmem-bench --phases: PE 0's medians of
# the entry meeting, the run, each submission's recording, vkQueueSubmit,
# fence wait and GPU time, the closing meeting, the call), 1 to 8 PEs, 16 B
# to 256 MiB (64 MiB on 8); then 2 PEs with the fence poll off.
phases() {
  for n in 1 2 4; do
    st phases-${n}pe 40 run $n 6G --collective broadcast,fcollect,alltoall,reduce --min-bytes 16 --max-bytes 256M --step-factor 16 --no-roofline --iters 20 --warmup 2 --warmup-ms 300 --phases
  done
  st phases-8pe 40 run 8 4G --collective broadcast,fcollect,alltoall,reduce --min-bytes 16 --max-bytes 64M --step-factor 16 --no-roofline --iters 20 --warmup 2 --warmup-ms 300 --phases
  st phases-2pe-spin0 20 env VKSHMEM_FENCE_SPIN_US=0 bash -c "run 2 2G --collective broadcast,reduce --min-bytes 16 --max-bytes 1M --step-factor 16 --no-roofline --iters 20 --warmup 2 --warmup-ms 300 --phases"
}
# UCC's collectives (gather(v) to the prefix sums), on the device past
# VKSHMEM_HOST_MAPPED_MAX. Checked on 2 and 4 PEs from 8 B to 16 MiB, then timed to
# 256 MiB beside the SHMEM alltoall and fcollect of the same sizes.
U=gather,scatter,allgatherv,alltoallv,reduce_scatter,reduce_to_root,inscan,exscan
ucc() {
  st ucc-check-2pe 30 run 2 2G --collective $U --check --min-bytes 8 --max-bytes 16M --step-factor 8 $Q --csv $R/ucc-check-2pe.csv
  st ucc-check-4pe 40 run 4 2G --collective $U --check --min-bytes 8 --max-bytes 16M --step-factor 8 $Q --csv $R/ucc-check-4pe.csv
  st ucc-2pe 40 run 2 6G --collective $U,alltoall,fcollect --min-bytes 1M --max-bytes 256M --step-factor 4 $Q --warmup-ms 300 --csv $R/ucc-2pe.csv
  st ucc-4pe 50 run 4 10G --collective $U,alltoall,fcollect --min-bytes 1M --max-bytes 256M --step-factor 4 $Q --warmup-ms 300 --csv $R/ucc-4pe.csv
}
standard() {
# busbw against size up to 1 GiB, every host collective (one submitter per
# device, VKSHMEM_SUBMIT=auto, and the fence poll, VKSHMEM_FENCE_SPIN_US
# unset: both on by default on NVIDIA). The copy roofline is torch's.
st host-2pe 50 run 2 6G --collective $C --min-bytes 1M --max-bytes 1G --step-factor 4 $Q --csv $R/host-2pe.csv
st host-4pe 50 run 4 10G --collective $C --min-bytes 1M --max-bytes 1G --step-factor 4 $Q --csv $R/host-4pe.csv
st host-8pe 60 run 8 10G --collective $C --min-bytes 1M --max-bytes 512M --step-factor 4 $Q --csv $R/host-8pe.csv
checks
}
# standard() without its sweeps: checks, the bench's roofline, the fence
# poll, offsets, small sizes, reduction types, device forms on one PE.
checks() {
# Checked against the host reference on 4 and 8 PEs, 8 B to 64 MiB.
st check-4pe 40 run 4 2G --collective $C,barrier,sync --check --min-bytes 8 --max-bytes 64M --step-factor 8 $Q --csv $R/check-4pe.csv
st check-8pe 50 run 8 2G --collective $C --check --min-bytes 8 --max-bytes 32M --step-factor 8 $Q --csv $R/check-8pe.csv
# The bench's own copy roofline (PE 0 copies every PE's bytes in one launch
# where one PE submits for all), 2 PEs, beside the rows.
st roof-2pe 50 run 2 6G --collective broadcast,alltoall,reduce --min-bytes 1M --max-bytes 256M --step-factor 4 --iters 10 --warmup 2 --csv $R/roof-2pe.csv
# The fence poll: unset (the default) against 0, 2 PEs, small to large.
for sp in 0 auto 0 auto; do
  if [ $sp = auto ]; then e="env -u VKSHMEM_FENCE_SPIN_US"; else e="env VKSHMEM_FENCE_SPIN_US=0"; fi
  st spin$sp-2pe-$RANDOM 12 $e bash -c 'run 2 1G --collective broadcast,reduce --min-bytes 8 --max-bytes 64M --step-factor 8 --no-roofline --iters 20'
done
# Objects 4 bytes off 16-byte alignment, 2 PEs, checked: pushes and
# reductions take them whole (WideArgs::lead).
st offset4-2pe 25 run 2 2G --collective $C --offset 4 --check --min-bytes 4K --max-bytes 64M --step-factor 16 $Q --csv $R/offset4-2pe.csv
# Pieces off whole vec4s on 4 and 8 PEs (8 B a member: word-by-word pulls)
# and int8 objects 1 byte off alignment (the generic kernels, run by the
# first member as each member), checked.
st small-4pe 20 run 4 1G --collective $C --check --min-bytes 8 --max-bytes 4K --step-factor 8 $Q --csv $R/small-4pe.csv
st small-8pe 25 run 8 1G --collective $C --check --min-bytes 8 --max-bytes 4K --step-factor 8 $Q --csv $R/small-8pe.csv
st int8-offset1-2pe 20 run 2 1G --collective $C --type int8 --offset 1 --check --min-bytes 3 --max-bytes 3M --step-factor 16 $Q --csv $R/int8-offset1-2pe.csv
# Reductions over the other types at 64 MiB, 2 PEs, checked.
st red-types 30 bash -c 'for t in int8 int16 int64 double float16 bfloat16; do run 2 2G --collective reduce --type $t --min-bytes 64M --max-bytes 64M --check --no-roofline --iters 10 --warmup 2; done'
# Device forms on one PE (nothing waits across processes): one workgroup
# against every resident workgroup of one dispatch, 8 B to 64 MiB, checked.
st dev-1pe 30 run 1 2G --collective barrier,broadcast,fcollect,alltoall,reduce --scope work_group,work_groups --min-bytes 8 --max-bytes 64M --step-factor 8 --check $Q --csv $R/dev-1pe.csv
}
# Several lists run in the order given, comma-separated (standard,old-new,unit).
for m in $(echo "${3:-standard}" | tr , ' '); do
  case "$m" in
    ab) ab ;;
    bimodal|mixes) bimodal ;;
    old-new) old_new ;;
    old-new-small) old_new_small ;;
    old-new-all) old_new_all ;;
    checks) checks ;;
    unit) unit ;;
    sweep) sweep ;;
    phases) phases ;;
    ucc) ucc ;;
    reuse) reuse ;;
    word) word ;;
    all) standard; ab ;;
    *) standard ;;
  esac
done
kill $CLOCKS 2>/dev/null
log "total $(( $(date +%s) - T0 ))s"
[ -e $R/mixes.txt ] && cut -c11- $R/mixes.txt >> $SUM
grep -h '# best' $R/copy-shapes.txt | cut -c11- >> $SUM
grep -h -E 'wide_(copy_1|push|reduce)' $R/copy-shapes.txt | cut -c11- >> $SUM
awk -F', ' 'NR>1 {c[$6]++; sm[$2]++; mem[$3]++} END {for (k in c) print "throttle", k, c[k]; for (k in sm) print "sm_clock", k, sm[k]; for (k in mem) print "mem_clock", k, mem[k]}' $R/clocks.csv | sort | head -30 >> $SUM
# busbw (GB/s) by size, one line per stage and collective.
for f in $R/sweep*.csv $R/unit*.csv $R/old-[0-9]*.csv $R/mid-*.csv $R/new-[0-9]*.csv $R/host-*.csv $R/wg*.csv $R/heap*.csv $R/bi*.csv $R/roof-2pe.csv $R/dev-1pe.csv; do
  [ -e $f ] || continue
  awk -F, -v t=$(basename $f .csv) 'NR>1 {k=t" "$1" "$2; if (!(k in s)) o[++n]=k; s[k]=s[k] sprintf(" %s:%.0f", ($7>=1073741824? $7/1073741824 "G" : ($7>=1048576? $7/1048576 "M" : $7)), (t=="dev-1pe"? $12 : $13))} END {for (i=1;i<=n;i++) print o[i] s[o[i]]}' $f
done >> $SUM
# UCC's rows and the old-against-new small sizes: median time (us) by size.
for f in $R/ucc-2pe.csv $R/ucc-4pe.csv $R/old-small-*.csv $R/new-small-*.csv $R/reuse*.csv $R/fence-small-*.csv $R/word-small-*.csv; do
  [ -e $f ] || continue
  awk -F, -v t=$(basename $f .csv) 'NR>1 {k=t" "$1; if (!(k in s)) o[++n]=k; s[k]=s[k] sprintf(" %s:%.0fus", ($7>=1048576? $7/1048576 "M" : $7), $9)} END {for (i=1;i<=n;i++) print o[i] s[o[i]]}' $f
done >> $SUM
for f in $R/roof-2pe.csv; do
  [ -e $f ] && awk -F, 'NR>1 {printf "roof %s %s %.0f%% of %.0f GB/s\n", $1, $7, $14, $15}' $f
done >> $SUM
for f in $R/check-*.csv $R/ucc-check-*.csv $R/offset4-2pe.csv $R/small-*.csv $R/int8-offset1-2pe.csv; do
  [ -e $f ] && awk -F, -v t=$(basename $f .csv) 'NR>1 {w+=$16; r++; if ($7==8 || $7==4096 || $7>=16777216) printf "%s %s %s %.0fus\n", t, $1, $7, $9} END {print t, "rows", r, "wrong", w}' $f
done >> $SUM
grep -h -i -E '^ *[0-9.]+ (# skipped|.*error|.*panic|.*timed out)' $R/*.txt | cut -c11- | sort | uniq -c | head -20 >> $SUM
awk '$2=="reduce" && $3=="host" {print "red", $4, $7, $8 "us", $13 "GB/s", "wrong", $14}' $R/red-types.txt >> $SUM
for f in $R/spin*.txt; do
  awk -v t=$(basename $f .txt) '$3=="host" && ($7==8 || $7==65536 || $7==67108864) {printf "%s %s %s %s\n", t, $2, $7, $8}' $f
  grep -h '# floors' $f | sed 's/(read + write).*//' | cut -c11-
done >> $SUM
for f in $R/phases-*.txt $R/modes-*.txt; do
  [ -e $f ] && grep -h '# phases' $f | cut -c11- | sed "s/^/$(basename $f .txt) /"
done >> $SUM
(cd /tmp && tar czf $OUT/results.tgz r); cp $SUM $OUT/
cat $SUM
