out=$1; mkdir -p $out
for r in $(seq 1 $2); do for v in A B; do
  /tmp/bin$v/vkshmrun -n 2 /tmp/bin$v/vkshmem-bench --no-roofline --scope work_group --min-bytes 4M --max-bytes 4M --iters 40 --warmup 2 --collective broadcast,fcollect,alltoall,reduce --type float > $out/$v-r$r.txt 2>&1
done; done
for v in A B; do for c in broadcast fcollect alltoall reduce; do printf "%s %-10s" $v $c; grep -h -E "^ *$c +work_group " $out/$v-r*.txt | awk '{printf " %7.0f", $7}'; echo; done; done
