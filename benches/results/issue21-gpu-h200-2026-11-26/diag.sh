#!/bin/bash
# Why every multi-PE bench died on NVIDIA (barrier #345, DEVICE_LOST): one PE,
# host-only, and the library's device waits across processes, each bounded.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/cache
R=/tmp/r; mkdir -p $R; B=.gpu; SUM=$OUT/summary.txt; : > $SUM
dmesg -c > /dev/null 2>&1
st() { local name=$1 secs=$2; shift 2; local t=$(date +%s)
  timeout -k 3 $secs "$@" > $R/$name.txt 2>&1; local rc=$?
  echo "STAGE $name rc=$rc $(( $(date +%s) - t ))s" >> $SUM
  tail -4 $R/$name.txt | cut -c1-300 >> $SUM
  dmesg -c 2>/dev/null | grep -i -E 'xid|nvrm' | head -3 | cut -c1-300 >> $SUM
  (cd /tmp && tar czf $OUT/diag.tgz r); }
st one-pe 40 $B/vkshmrun -n 1 --wait-timeout 10 $B/vkshmem-bench --collective broadcast,reduce,barrier --scope host,work_group --check --min-bytes 8 --max-bytes 16M --step-factor 16
st host-barrier 20 $B/vkshmrun -n 2 --wait-timeout 10 $B/host_barrier 200
st dev-barrier 25 $B/vkshmrun -n 2 --wait-timeout 10 $B/device_barrier 100
st litmus 25 $B/vkshmrun -n 2 --wait-timeout 10 $B/litmus 1000
st collectives 25 $B/vkshmrun -n 2 --wait-timeout 10 $B/collectives
RUST_LOG=debug st bench-2pe-log 30 $B/vkshmrun -n 2 --wait-timeout 12 $B/vkshmem-bench --collective broadcast --min-bytes 1M --max-bytes 1M
cat $SUM
