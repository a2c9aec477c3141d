# bf16 reductions: old (a22a7dd, /tmp/b24show) against new (/tmp/b24bf), interleaved.
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
common="--scope host --collective reduce --type bfloat16 --min-bytes 1M --max-bytes 4M --step-factor 4 --iters 60 --warmup 2 --check --no-roofline"
for r in 1 2 3 4 5 6 7 8; do for n in 2 4 8; do for v in show bf; do
  b=/tmp/b24$v
  timeout 300 $b/vkshmrun -n $n $b/vkshmem-bench $common --op sum --csv "$out/$v-$n-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $r
done; done; done
echo DONE
