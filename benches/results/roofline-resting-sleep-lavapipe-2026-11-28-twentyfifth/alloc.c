// One process: for each of 12 fresh allocations (mmap, touched), the best of 8 copies of a
// 32 MiB pair (64 MiB live): is the copy rate a property of the allocation? HUGE=1 madvises
// MADV_HUGEPAGE. Prints GB/s (read+write) per allocation.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#define N (32ul<<20)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){int huge=getenv("HUGE")&&atoi(getenv("HUGE"));
  for(int a=0;a<12;a++){
    char*s=mmap(0,N,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
    char*d=mmap(0,N+4096,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
    if(huge){madvise(s,N,MADV_HUGEPAGE);madvise(d,N+4096,MADV_HUGEPAGE);}
    memset(s,1,N); memset(d,2,N+4096); char*dd=d+2048;
    double best=0; for(int t=0;t<8;t++){double t0=now(); memcpy(dd,s,N); __asm__ volatile(""::"r"(dd),"r"(s):"memory"); double bw=2.0*N/(now()-t0)/1e9; if(bw>best)best=bw;}
    printf("%.1f ",best); fflush(stdout);
    munmap(s,N); munmap(d,N+4096);}
  printf("\n");}
