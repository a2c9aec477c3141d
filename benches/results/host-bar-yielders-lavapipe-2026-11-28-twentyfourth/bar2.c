// As bar.c with 2 more processes polling sched_yield during the copiers' window (the bench's
// resting PEs in barrier_all when 4 PEs share 2 cores). YIELD=0: the resters sleep instead.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/mman.h>
#define N (16u<<20)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){double*res=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  int yield=getenv("YIELD")?atoi(getenv("YIELD")):1; int me=0;
  for(int i=1;i<4;i++){ if(fork()==0){me=i;break;} }
  if(me>=2){ double t0=now(); while(now()-t0<0.12){ if(yield) sched_yield(); else usleep(1000);} _exit(0);}
  char*s=malloc(N),*d=malloc(N+4096); memset(s,1,N); memset(d,2,N+4096); d+=2048;
  double best=0; for(int t=0;t<4;t++){double t0=now(); long c=0; while(now()-t0<0.025){memcpy(d,s,N);__asm__ volatile("" :: "r"(d), "r"(s) : "memory");c++;} double bw=2.0*N*c/(now()-t0)/1e9; if(bw>best)best=bw;}
  res[me]=best; if(me)_exit(0); while(wait(0)>0); printf("%.1f %.1f sum %.1f GB/s\n",res[0],res[1],res[0]+res[1]);}
