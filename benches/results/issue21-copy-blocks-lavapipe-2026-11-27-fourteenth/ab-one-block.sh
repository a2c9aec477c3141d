#!/bin/bash
# Interleaved A/B, no roofline: arm "base" (env unset) vs "exp" (VKS_EXP_ONE_BLOCK=1).
cd /work/main
N=${N:-2}; C=${C:-alltoall,alltoalls}; R=${R:-3}
for r in $(seq 1 $R); do
  for arm in base exp; do
    if [ $arm = base ]; then e="env -u VKS_EXP_ONE_BLOCK"; else e="env VKS_EXP_ONE_BLOCK=1"; fi
    $e VKSHMEM_SYMMETRIC_SIZE=256M target/release/vkshmrun -n $N target/release/vkshmem-bench --collective $C --scope host --min-bytes 4M --max-bytes 4M --iters ${I:-20} --warmup 3 --no-roofline --check --csv /tmp/ab/$arm-n$N-r$r.csv < /dev/null > /tmp/ab/$arm-n$N-r$r.txt 2>&1
    echo "$arm n=$N r=$r $(cut -d, -f1,9,16 /tmp/ab/$arm-n$N-r$r.csv | tail -n +2 | awk -F, '{printf "%s %.0f w=%s  ", $1, $2, $3}')"
  done
done
