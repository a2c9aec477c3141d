#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){size_t n=8<<20;
char*a=aligned_alloc(4096,n),*a2=aligned_alloc(4096,n),*b=aligned_alloc(4096,n+8192);memset(a,1,n);memset(a2,1,n);memset(b,2,n+8192);
double t[3]={0},by[3]={0};double t0=now();int m=0;
while(now()-t0<6){double s=now();while(now()-s<0.05){
 if(m==0) memcpy(b+2048,a,n);
 else if(m==1){memcpy(b+2048,a,n/2);memcpy(b+2048+n/2,a2+n/2,n/2);}
 else {memcpy(b+4+2048,a+4,n/2);memcpy(b+4+2048+n/2,a2+n/2,n/2-4);}
 __asm__ volatile("":::"memory");by[m]+=2.0*n;}
 t[m]+=now()-s;m=(m+1)%3;}
printf("whole %.1f  two halves from two buffers %.1f  same +4 offset %.1f GB/s\n",by[0]/t[0]/1e9,by[1]/t[1]/1e9,by[2]/t[2]/1e9);}
