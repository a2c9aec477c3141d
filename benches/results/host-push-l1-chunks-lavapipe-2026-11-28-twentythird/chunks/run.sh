export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3; do for n in 2 4 8; do for v in cur p64m p4m p16m; do
  unset TRY_PM TRY_PC
  case $v in cur) ;; p64m) export TRY_PM=1;; p4m) export TRY_PM=1 TRY_PC=4096;; p16m) export TRY_PM=1 TRY_PC=16384;; esac
  timeout 120 /tmp/b23p/vkshmrun -n $n /tmp/b23p/vkshmem-bench --scope host --collective fcollect,collect --type float --min-bytes 1M --max-bytes 4M --step-factor 4 --iters 30 --check --no-roofline --csv "$out/$v-$n-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n
done; done; done
