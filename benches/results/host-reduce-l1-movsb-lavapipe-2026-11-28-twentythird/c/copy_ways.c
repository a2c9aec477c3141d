#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void avx(char*d,const char*s,size_t n){for(size_t i=0;i<n;i+=128){__m256i a=_mm256_loadu_si256((void*)(s+i)),b=_mm256_loadu_si256((void*)(s+i+32)),c=_mm256_loadu_si256((void*)(s+i+64)),e=_mm256_loadu_si256((void*)(s+i+96));_mm256_storeu_si256((void*)(d+i),a);_mm256_storeu_si256((void*)(d+i+32),b);_mm256_storeu_si256((void*)(d+i+64),c);_mm256_storeu_si256((void*)(d+i+96),e);}}
static void nt(char*d,const char*s,size_t n){for(size_t i=0;i<n;i+=128){__m256i a=_mm256_loadu_si256((void*)(s+i)),b=_mm256_loadu_si256((void*)(s+i+32)),c=_mm256_loadu_si256((void*)(s+i+64)),e=_mm256_loadu_si256((void*)(s+i+96));_mm256_stream_si256((void*)(d+i),a);_mm256_stream_si256((void*)(d+i+32),b);_mm256_stream_si256((void*)(d+i+64),c);_mm256_stream_si256((void*)(d+i+96),e);}_mm_sfence();}
static void movsb(char*d,const char*s,size_t n){asm volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory");}
int main(int argc,char**argv){
  size_t n=(size_t)atol(argv[1])<<10, chunk=(size_t)atol(argv[2])<<10;
  char*s=aligned_alloc(4096,n),*d=aligned_alloc(4096,n+4096); d+=2048;
  memset(s,1,n);memset(d,2,n);
  const char*names[]={"memcpy","avx","nt","movsb"};
  for(int rep=0;rep<3;rep++) for(int k=0;k<4;k++){
    double best=1e9;
    for(int it=0;it<30;it++){double t=now();
      for(size_t o=0;o<n;o+=chunk){size_t m=chunk<n-o?chunk:n-o;
        if(k==0)memcpy(d+o,s+o,m);else if(k==1)avx(d+o,s+o,m);else if(k==2)nt(d+o,s+o,m);else movsb(d+o,s+o,m);}
      t=now()-t; if(t<best)best=t;}
    printf("%s n=%zuK chunk=%zuK %.1f GB/s\n",names[k],n>>10,chunk>>10,2.0*n/best/1e9);
  }
}
