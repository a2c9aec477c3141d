// Two processes copying their own 16 MiB pair for SECS seconds: each 100 ms slot's GB/s (both summed).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/mman.h>
#define N (16u<<20)
#define SLOTS 600
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){double*res=mmap(0,2*SLOTS*8,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  pid_t p=fork(); int me=p==0;
  char*s=malloc(N),*d=malloc(N+4096); memset(s,1,N); memset(d,2,N+4096); d+=2048;
  double t00=now();
  for(int k=0;k<SLOTS;k++){long c=0; double t0=now(); while(now()-t00<0.1*(k+1)){memcpy(d,s,N);__asm__ volatile("" :: "r"(d), "r"(s) : "memory");c++;} res[me*SLOTS+k]=2.0*N*c/(now()-t0)/1e9;}
  if(me)_exit(0); waitpid(p,0,0);
  for(int k=0;k<SLOTS;k++) printf("%.1f %.1f %.1f\n",k*0.1,res[k],res[SLOTS+k]);}
