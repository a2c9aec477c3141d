#!/bin/sh
# Old (9c0c417: last session's Show build) against new (2480bfe: this
# session's tree) on this VM, interleaved: the float rows of the Show on 2 and
# 4 PEs at 4 MiB, three rounds. Usage: OLD=dir NEW=dir run.sh OUTDIR
set -e
out=$1; mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
for r in 1 2 3; do for v in old new; do for n in 2 4; do
  eval b=\$$(echo $v | tr a-z A-Z)
  VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $n $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective $colls --type float --csv "$out/$v-${n}pe-r$r.csv" > "$out/$v-${n}pe-r$r.txt"
  grep -hE '^ *[a-z]+ +host ' "$out/$v-${n}pe-r$r.txt" | awk -v t="$v ${n}pe r$r" '{print t, $1, $7, $10, $13}'
done; done; done
