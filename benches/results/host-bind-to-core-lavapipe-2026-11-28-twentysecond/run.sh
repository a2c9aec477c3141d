export VKSHMEM_SYMMETRIC_SIZE=256M
B=${B:-/tmp/b22cur}
out=$1; mkdir -p $out
for round in 1 2 3 4; do for n in 2; do for v in free bind; do
  if [ $v = bind ]; then
    timeout 200 $B/vkshmrun -n $n sh -c 'exec taskset -c $((VKSHMEM_PE % 2)) "$0" "$@"' $B/vkshmem-bench --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --min-bytes 64K --max-bytes 4M --step-factor 8 --iters 40 --no-roofline --csv $out/$v-$n-all-r$round.csv < /dev/null > /dev/null 2>&1 || echo FAIL $v
  else
    timeout 200 $B/vkshmrun -n $n $B/vkshmem-bench --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --min-bytes 64K --max-bytes 4M --step-factor 8 --iters 40 --no-roofline --csv $out/$v-$n-all-r$round.csv < /dev/null > /dev/null 2>&1 || echo FAIL $v
  fi
done; done; done
