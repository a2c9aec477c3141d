// Model of the 2-PE host collect of 4 MiB: 2 processes, one memfd holding
// src0 src1 dst0 dst1; each call every process pushes its src into its half
// of both dests, 8 KiB at a time (rep movsb), a spin barrier between calls.
// Rows of 50 calls; prints each row's median us.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static size_t S;
int main(int c,char**v){ int rows=c>1?atoi(v[1]):30; int gapmode=c>2?atoi(v[2]):0; S=(c>4?atol(v[4]):4096)<<10; size_t chunk=8192; size_t fsz=c>3?atol(v[3])<<20:64<<20;
 int fd=memfd_create("x",0); size_t tot=4096+2*S+2*2*S; ftruncate(fd,tot);
 char*base=mmap(0,tot,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0); memset(base,1,tot);
 _Atomic unsigned *ctr=(void*)base; char*src[2]={base+4096,base+4096+S}; char*dst[2]={base+4096+2*S, base+4096+4*S};
 for(int k=0;k<2;k++) if(fork()==0){ unsigned gen=0; double t[50];
  for(int r=0;r<rows;r++){ for(int i=0;i<52;i++){ gen+=2; atomic_fetch_add(ctr,1); while(atomic_load(ctr)<gen); double t0=now();
    for(size_t at=0;at<S;at+=chunk){ for(int d=0;d<2;d++){ void*dd=dst[d]+k*S+at; const void*ss=src[k]+at; size_t nn=chunk; __asm__ volatile("rep movsb":"+D"(dd),"+S"(ss),"+c"(nn)::"memory");}}
    gen+=2; atomic_fetch_add(ctr,1); while(atomic_load(ctr)<gen); gen-=0; if(i>=2) t[i-2]=(now()-t0)*1e6; gen=gen; }
   if(k==0){ qsort(t,50,sizeof(double),cmp); printf("%.0f ",t[25]); fflush(stdout);} { static char*fl=0; if(!fl){fl=malloc(2*fsz+64);memset(fl,3,2*fsz+64);} double t1=now();
 if(gapmode==0) usleep(100000); else if(gapmode==1){ while(now()-t1<0.1); } else if(gapmode==2){ while(now()-t1<0.1){memcpy(fl,fl+fsz+64,fsz);__asm__ volatile("":::"memory");} }
 else { while(now()-t1<0.1){ for(size_t i=0;i<fsz;i+=64) ((volatile char*)fl)[i]; } } }} if(k==0)printf("\n"); exit(0);}
 while(wait(0)>0); }
