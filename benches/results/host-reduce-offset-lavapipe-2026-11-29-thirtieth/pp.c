// 2 processes at once (one per core): streaming copy of S bytes vs streaming push of S*2/9 into 8 dests.
// mem: 0 anon (malloc), 1 memfd shared. sets: buffers cycled.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static char *mem(size_t n,int shared){ if(!shared){char*p=aligned_alloc(4096,n);memset(p,1,n);return p;} int fd=memfd_create("x",0); ftruncate(fd,n); char*p=mmap(0,n,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0); memset(p,1,n); return p;}
__attribute__((target("avx"))) static void stream(const char*f,char*t,size_t n){ size_t i=0; for(;i+128<=n;i+=128){ __m256i a=_mm256_loadu_si256((void*)(f+i)),b=_mm256_loadu_si256((void*)(f+i+32)),c=_mm256_loadu_si256((void*)(f+i+64)),d=_mm256_loadu_si256((void*)(f+i+96)); _mm256_stream_si256((void*)(t+i),a);_mm256_stream_si256((void*)(t+i+32),b);_mm256_stream_si256((void*)(t+i+64),c);_mm256_stream_si256((void*)(t+i+96),d);} memcpy(t+i,f+i,n-i);}
static size_t soff=2048, dgap=0;
int main(int c,char**v){ int mode=atoi(v[1]), shared=atoi(v[2]); if(c>3){soff=atoi(v[3]);dgap=atoi(v[4]);} size_t S=18<<20; int sets=4;
 for(int k=0;k<2;k++) if(fork()==0){ cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(k,&cs); sched_setaffinity(0,sizeof cs,&cs);
  char *src[4],*dst[4]; size_t L = (mode==1||mode==2)? S*2/9 : S; for(int s=0;s<sets;s++){src[s]=mem(L+4096,shared); dst[s]=mem(((mode==1||mode==2)?8*(L+dgap):L)+4096,shared);} 
  double best=0; for(int rep=0;rep<20;rep++){ double t=now(); double bytes=0;
   for(int s=0;s<sets;s++){ if(mode==2){ for(size_t at=0;at<L;at+=8192){ size_t n=L-at<8192?L-at:8192; for(int d=0;d<8;d++){ void*dd=dst[s]+d*L+at; const void*ss=src[s]+2048+at; size_t nn=n; __asm__ volatile("rep movsb":"+D"(dd),"+S"(ss),"+c"(nn)::"memory");}} bytes+=9.0*L; } else if(mode==3){ void*dd=dst[s]; const void*ss=src[s]+2048; size_t nn=L; __asm__ volatile("rep movsb":"+D"(dd),"+S"(ss),"+c"(nn)::"memory"); bytes+=2.0*L; } else if(!mode){ stream(src[s]+2048,dst[s],L); bytes+=2.0*L;} else { for(size_t at=0;at<L;at+=65536){ size_t n=L-at<65536?L-at:65536; for(int d=0;d<8;d++) stream(src[s]+soff+at,dst[s]+d*(L+dgap)+at,n);} bytes+=9.0*L; } }
   _mm_sfence(); t=now()-t; if(bytes/t>best)best=bytes/t; }
  printf("soff %zu dgap %zu proc %d mode %s mem %s: %.1f GB/s\n",soff,dgap,k,mode==0?"streamcopy":mode==1?"streampush8":mode==2?"movsbpush8":"movsbcopy",shared?"memfd":"anon",best/1e9); exit(0);} 
 while(wait(0)>0); }
