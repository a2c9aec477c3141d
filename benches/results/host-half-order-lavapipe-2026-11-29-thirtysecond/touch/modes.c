// Alternating 100 ms windows on 2 threads: (c) a streaming copy between two 10 MiB buffers
// (2 pairs cycled, as the bench's memcpy roofline), (p) a streaming push: a 2.5 MiB source to 4
// dests of 2.5 MiB (2 sets cycled, the 4-PE fcollect's pattern). GB/s read + written per window.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <immintrin.h>
#define SZ (10<<20)
static char *S[2][2], *D[2][2];
static int mode; static double rate[2];
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
__attribute__((target("avx"))) static void nt(char*d,const char*s,size_t n){for(size_t i=0;i<n;i+=128){__m256i a=_mm256_load_si256((const __m256i*)(s+i)),b=_mm256_load_si256((const __m256i*)(s+i+32)),c=_mm256_load_si256((const __m256i*)(s+i+64)),e=_mm256_load_si256((const __m256i*)(s+i+96));_mm256_stream_si256((__m256i*)(d+i),a);_mm256_stream_si256((__m256i*)(d+i+32),b);_mm256_stream_si256((__m256i*)(d+i+64),c);_mm256_stream_si256((__m256i*)(d+i+96),e);}}
static void *work(void*a){int me=(int)(long)a; double t=now(); double moved=0; long k=0;
 while(now()-t<0.1){ int p=k++%2;
  if(mode==0){nt(D[me][p],S[me][p],SZ); moved+=2.0*SZ;}
  else {size_t part=SZ/4; for(size_t c=0;c<part;c+=65536) for(int j=0;j<4;j++) nt(D[me][p]+j*part+c,S[me][p]+c,65536); moved+=part*5.0;}
 } _mm_sfence(); rate[me]=moved/(now()-t); return 0;}
int main(){for(int t=0;t<2;t++)for(int p=0;p<2;p++){S[t][p]=aligned_alloc(4096,SZ);D[t][p]=aligned_alloc(4096,SZ);memset(S[t][p],1,SZ);memset(D[t][p],2,SZ);}
 for(int w=0;w<40;w++){for(mode=0;mode<2;mode++){pthread_t th[2];for(long i=0;i<2;i++)pthread_create(&th[i],0,work,(void*)i);for(int i=0;i<2;i++)pthread_join(th[i],0);printf("%s%.0f",mode?"/":" ",(rate[0]+rate[1])/1e9);} if(w%10==9)printf("\n");fflush(stdout);}}
