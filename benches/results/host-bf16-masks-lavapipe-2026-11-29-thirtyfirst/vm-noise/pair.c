// Does a copy measured call by call alongside the 2-PE collect model track its slow modes?
// 2 processes; each row: 50 x (collect push call, then a copy of 4 MiB x 3 between private pairs), gap memcpy 64 MiB 0.1 s.
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
#define S (4ul<<20)
static _Atomic unsigned *ctr; static unsigned gen;
static void bar(){ gen+=2; atomic_fetch_add(ctr,1); while(atomic_load(ctr)<gen); }
static void movsb(void*d,const void*s,size_t n){__asm__ volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory");}
int main(int c,char**v){ int rows=atoi(v[1]);
 int fd=memfd_create("x",0); size_t tot=4096+2*S+2*2*S; ftruncate(fd,tot);
 char*base=mmap(0,tot,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0); memset(base,1,tot);
 ctr=(void*)base; char*src[2]={base+4096,base+4096+S}; char*dst[2]={base+4096+2*S, base+4096+4*S};
 for(int k=0;k<2;k++) if(fork()==0){ double tp[50],tc[50]; char*ps[3],*pd[3]; for(int i=0;i<3;i++){ps[i]=aligned_alloc(4096,S+4096)+64*i+64;pd[i]=aligned_alloc(4096,S+4096);memset(ps[i],1,S);memset(pd[i],1,S);}
  char*fl=malloc(128<<20); memset(fl,3,128<<20);
  for(int r=0;r<rows;r++){ for(int i=0;i<52;i++){ bar(); double t0=now();
    for(size_t at=0;at<S;at+=8192){ for(int d=0;d<2;d++) movsb(dst[d]+k*S+at,src[k]+at,8192);}
    bar(); double t1=now(); for(int j=0;j<3;j++) movsb(pd[j],ps[j],S); bar(); double t2=now();
    if(i>=2){tp[i-2]=(t1-t0)*1e6; tc[i-2]=(t2-t1)*1e6;} }
   if(k==0){ qsort(tp,50,8,cmp); qsort(tc,50,8,cmp); printf("push %4.0f copy %4.0f ratio %.2f\n",tp[25],tc[25],tc[25]/tp[25]); fflush(stdout);}
   double t1=now(); while(now()-t1<0.1){memcpy(fl,fl+(64<<20),64<<20);__asm__ volatile("":::"memory");} bar(); }
  exit(0);}
 while(wait(0)>0); }
