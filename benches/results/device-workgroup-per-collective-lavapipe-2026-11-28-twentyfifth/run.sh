# The device forms as `cargo xtask bench` sweeps them (4 PEs, every collective, up to 256 KiB,
# 10 calls, --no-roofline): one workgroup size for the whole sweep (old, /tmp/show25bin: the
# smallest that fits every collective, 32 here, the scans' need) against one per collective
# (new, /tmp/pc25), two interleaved rounds. Usage: run.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for r in 1 2; do for v in old new; do
  b=/tmp/show25bin; [ $v = new ] && b=/tmp/pc25
  timeout 900 $b/vkshmrun -n 4 $b/vkshmem-bench --collective all --scope work_group,work_groups --check --max-bytes 256K --iters 10 --no-roofline --csv "$out/$v-4-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $r
done; done
echo DONE
