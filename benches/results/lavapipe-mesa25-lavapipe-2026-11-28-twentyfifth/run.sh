# The device forms at 4 MiB on 2 PEs on Debian 12's lavapipe (Mesa 22.3.6, old) against
# bookworm-backports' (Mesa 25.0.7, new: mesa-vulkan-drivers, libdrm2 and libdrm-amdgpu1 unpacked
# with dpkg -x into /tmp/mesa25, its ICD json pointed at that library), the same bench binary
# (/tmp/pc25, 10deb0b), two interleaved rounds. Usage: run.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
b=/tmp/pc25
for r in 1 2; do for v in old new; do
  if [ $v = new ]; then
    export VK_DRIVER_FILES=/tmp/mesa25/lvp25.json LD_LIBRARY_PATH=/tmp/mesa25/usr/lib/x86_64-linux-gnu
  else
    unset VK_DRIVER_FILES LD_LIBRARY_PATH
  fi
  timeout 600 $b/vkshmrun -n 2 $b/vkshmem-bench --scope work_groups,work_group --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective $colls,barrier --type float --csv "$out/$v-2-r$r.csv" < /dev/null > "$out/$v-2-r$r.txt" 2>&1 || echo FAIL $v $r
done; done
echo DONE
