    7f5063234840:	c5 fd 6f 9f 00 3c 00 	vmovdqa 0x3c00(%rdi),%ymm3
    7f5063234847:	00 
    7f5063234848:	62 b3 65 28 1e df 01 	vpcmpltud %ymm23,%ymm3,%k3
    7f506323484f:	c5 fd 6f d0          	vmovdqa %ymm0,%ymm2
    7f5063234853:	62 f3 fd 28 25 d0 0f 	vpternlogq $0xf,%ymm0,%ymm0,%ymm2
    7f506323485a:	62 f1 7d 2b 6f d5    	vmovdqa32 %ymm5,%ymm2{%k3}
    7f5063234860:	62 e1 6d 28 db a7 a0 	vpandd 0x2fa0(%rdi),%ymm2,%ymm20
    7f5063234867:	2f 00 00 
    7f506323486a:	62 f1 5d 20 db d0    	vpandd %ymm0,%ymm20,%ymm2
    7f5063234870:	62 81 65 28 fe e9    	vpaddd %ymm25,%ymm3,%ymm21
    7f5063234876:	62 71 fd 48 7f 7f 1d 	vmovdqa64 %zmm15,0x740(%rdi)
    7f506323487d:	62 71 fd 48 7f 7f 1c 	vmovdqa64 %zmm15,0x700(%rdi)
    7f5063234884:	62 61 fd 28 6f a7 20 	vmovdqa64 0x3e20(%rdi),%ymm28
    7f506323488b:	3e 00 00 
    7f506323488e:	c7 87 2c 49 00 00 00 	movl   $0x0,0x492c(%rdi)
    7f5063234895:	00 00 00 
    7f5063234898:	eb 32                	jmp    0x7f50632348cc
    7f506323489a:	66 0f 1f 44 00 00    	nopw   0x0(%rax,%rax,1)
    7f50632348a0:	62 f2 fd 48 7c da    	vpbroadcastq %rdx,%zmm3
    7f50632348a6:	62 d3 e5 48 1f 1b 04 	vpcmpneqq (%r11),%zmm3,%k3
    7f50632348ad:	62 f1 fd cb 6f 5f 1c 	vmovdqa64 0x700(%rdi),%zmm3{%k3}{z}
    7f50632348b4:	62 f1 fd 48 7f 5f 1c 	vmovdqa64 %zmm3,0x700(%rdi)
    7f50632348bb:	ff c0                	inc    %eax
    7f50632348bd:	89 87 2c 49 00 00    	mov    %eax,0x492c(%rdi)
    7f50632348c3:	83 f8 08             	cmp    $0x8,%eax
    7f50632348c6:	0f 83 d4 00 00 00    	jae    0x7f50632349a0
    7f50632348cc:	48 63 87 2c 49 00 00 	movslq 0x492c(%rdi),%rax
    7f50632348d3:	89 c1                	mov    %eax,%ecx
    7f50632348d5:	83 e1 07             	and    $0x7,%ecx
    7f50632348d8:	c5 fd 7f 94 24 80 c3 	vmovdqa %ymm2,0xc380(%rsp)
    7f50632348df:	00 00 
    7f50632348e1:	8b 94 8c 80 c3 00 00 	mov    0xc380(%rsp,%rcx,4),%edx
    7f50632348e8:	62 61 fd 28 7f a4 24 	vmovdqa64 %ymm28,0xc3a0(%rsp)
    7f50632348ef:	a0 c3 00 00 
    7f50632348f3:	62 e1 fd 28 7f ac 24 	vmovdqa64 %ymm21,0xc3c0(%rsp)
    7f50632348fa:	c0 c3 00 00 
    7f50632348fe:	85 94 8c a0 c3 00 00 	test   %edx,0xc3a0(%rsp,%rcx,4)
    7f5063234905:	74 b4                	je     0x7f50632348bb
    7f5063234907:	8b 9c 8c c0 c3 00 00 	mov    0xc3c0(%rsp,%rcx,4),%ebx
    7f506323490e:	c1 e3 04             	shl    $0x4,%ebx
    7f5063234911:	c1 fb 03             	sar    $0x3,%ebx
    7f5063234914:	48 8b 57 10          	mov    0x10(%rdi),%rdx
    7f5063234918:	8b 8a 28 7f 00 00    	mov    0x7f28(%rdx),%ecx
    7f506323491e:	48 8b b2 20 7f 00 00 	mov    0x7f20(%rdx),%rsi
    7f5063234925:	c1 f9 03             	sar    $0x3,%ecx
    7f5063234928:	48 63 d0             	movslq %eax,%rdx
    7f506323492b:	39 cb                	cmp    %ecx,%ebx
    7f506323492d:	73 21                	jae    0x7f5063234950
    7f506323492f:	4c 63 f3             	movslq %ebx,%r14
    7f5063234932:	62 e1 fd 48 6f 57 1d 	vmovdqa64 0x740(%rdi),%zmm18
    7f5063234939:	62 f2 fd 48 7c da    	vpbroadcastq %rdx,%zmm3
    7f506323493f:	62 d2 e5 48 29 1b    	vpcmpeqq (%r11),%zmm3,%k3
    7f5063234945:	62 a2 fd 4b 59 14 f6 	vpbroadcastq (%rsi,%r14,8),%zmm18{%k3}
    7f506323494c:	eb 16                	jmp    0x7f5063234964
    7f506323494e:	66 90                	xchg   %ax,%ax
    7f5063234950:	62 f2 fd 48 7c da    	vpbroadcastq %rdx,%zmm3
    7f5063234956:	62 d3 e5 48 1f 1b 04 	vpcmpneqq (%r11),%zmm3,%k3
    7f506323495d:	62 e1 fd cb 6f 57 1d 	vmovdqa64 0x740(%rdi),%zmm18{%k3}{z}
    7f5063234964:	62 e1 fd 48 7f 57 1d 	vmovdqa64 %zmm18,0x740(%rdi)
    7f506323496b:	83 cb 01             	or     $0x1,%ebx
    7f506323496e:	39 cb                	cmp    %ecx,%ebx
    7f5063234970:	0f 83 2a ff ff ff    	jae    0x7f50632348a0
    7f5063234976:	48 63 cb             	movslq %ebx,%rcx
    7f5063234979:	62 f2 fd 48 7c da    	vpbroadcastq %rdx,%zmm3
    7f506323497f:	62 d2 e5 48 29 1b    	vpcmpeqq (%r11),%zmm3,%k3
    7f5063234985:	62 f1 fd 48 6f 5f 1c 	vmovdqa64 0x700(%rdi),%zmm3
    7f506323498c:	62 f2 fd 4b 59 1c ce 	vpbroadcastq (%rsi,%rcx,8),%zmm3{%k3}
    7f5063234993:	e9 1c ff ff ff       	jmp    0x7f50632348b4
    7f5063234998:	0f 1f 84 00 00 00 00 	nopl   0x0(%rax,%rax,1)
    7f506323499f:	00 
    7f50632349a0:	62 e1 7c 48 28 6f 1c 	vmovaps 0x700(%rdi),%zmm21
    7f50632349a7:	62 61 fd 48 6f 67 1d 	vmovdqa64 0x740(%rdi),%zmm28
    7f50632349ae:	62 f1 3d 20 fe 9f 00 	vpaddd 0x3c00(%rdi),%ymm24,%ymm3
    7f50632349b5:	3c 00 00 
    7f50632349b8:	c5 e5 fe db          	vpaddd %ymm3,%ymm3,%ymm3
    7f50632349bc:	62 41 65 28 db ed    	vpandd %ymm13,%ymm3,%ymm29
    7f50632349c2:	62 61 fd 28 6f b7 20 	vmovdqa64 0x3e20(%rdi),%ymm30
    7f50632349c9:	3e 00 00 
    7f50632349cc:	c7 87 28 49 00 00 00 	movl   $0x0,0x4928(%rdi)
    7f50632349d3:	00 00 00 
    7f50632349d6:	eb 19                	jmp    0x7f50632349f1
    7f50632349d8:	0f 1f 84 00 00 00 00 	nopl   0x0(%rax,%rax,1)
    7f50632349df:	00 
    7f50632349e0:	ff c0                	inc    %eax
    7f50632349e2:	89 87 28 49 00 00    	mov    %eax,0x4928(%rdi)
    7f50632349e8:	83 f8 08             	cmp    $0x8,%eax
    7f50632349eb:	0f 83 af 00 00 00    	jae    0x7f5063234aa0
    7f50632349f1:	48 63 87 28 49 00 00 	movslq 0x4928(%rdi),%rax
    7f50632349f8:	89 c1                	mov    %eax,%ecx
    7f50632349fa:	83 e1 07             	and    $0x7,%ecx
    7f50632349fd:	62 61 fd 28 7f b4 24 	vmovdqa64 %ymm30,0xc320(%rsp)
    7f5063234a04:	20 c3 00 00 
    7f5063234a08:	8b 94 8c 20 c3 00 00 	mov    0xc320(%rsp,%rcx,4),%edx
    7f5063234a0f:	c5 fd 7f 94 24 40 c3 	vmovdqa %ymm2,0xc340(%rsp)
    7f5063234a16:	00 00 
    7f5063234a18:	85 94 8c 40 c3 00 00 	test   %edx,0xc340(%rsp,%rcx,4)
    7f5063234a1f:	62 61 fd 28 7f ac 24 	vmovdqa64 %ymm29,0xc360(%rsp)
    7f5063234a26:	60 c3 00 00 
    7f5063234a2a:	74 b4                	je     0x7f50632349e0
    7f5063234a2c:	8b b4 8c 60 c3 00 00 	mov    0xc360(%rsp,%rcx,4),%esi
    7f5063234a33:	48 8b 57 10          	mov    0x10(%rdi),%rdx
    7f5063234a37:	8b 8a 08 7f 00 00    	mov    0x7f08(%rdx),%ecx
    7f5063234a3d:	4c 8b b2 00 7f 00 00 	mov    0x7f00(%rdx),%r14
    7f5063234a44:	c1 f9 03             	sar    $0x3,%ecx
    7f5063234a47:	39 ce                	cmp    %ecx,%esi
    7f5063234a49:	73 1e                	jae    0x7f5063234a69
    7f5063234a4b:	62 61 fd 48 7f a4 24 	vmovdqa64 %zmm28,0xe340(%rsp)
    7f5063234a52:	40 e3 00 00 
    7f5063234a56:	89 c2                	mov    %eax,%edx
    7f5063234a58:	83 e2 07             	and    $0x7,%edx
    7f5063234a5b:	48 8b 94 d4 40 e3 00 	mov    0xe340(%rsp,%rdx,8),%rdx
    7f5063234a62:	00 
    7f5063234a63:	89 f3                	mov    %esi,%ebx
    7f5063234a65:	49 89 14 de          	mov    %rdx,(%r14,%rbx,8)
    7f5063234a69:	83 ce 01             	or     $0x1,%esi
    7f5063234a6c:	39 ce                	cmp    %ecx,%esi
    7f5063234a6e:	0f 83 6c ff ff ff    	jae    0x7f50632349e0
    7f5063234a74:	62 e1 7c 48 29 ac 24 	vmovaps %zmm21,0xe300(%rsp)
    7f5063234a7b:	00 e3 00 00 
    7f5063234a7f:	89 c1                	mov    %eax,%ecx
    7f5063234a81:	83 e1 07             	and    $0x7,%ecx
    7f5063234a84:	48 8b 8c cc 00 e3 00 	mov    0xe300(%rsp,%rcx,8),%rcx
    7f5063234a8b:	00 
    7f5063234a8c:	89 f2                	mov    %esi,%edx
    7f5063234a8e:	49 89 0c d6          	mov    %rcx,(%r14,%rdx,8)
    7f5063234a92:	e9 49 ff ff ff       	jmp    0x7f50632349e0
    7f5063234a97:	66 0f 1f 84 00 00 00 	nopw   0x0(%rax,%rax,1)
    7f5063234a9e:	00 00 
    7f5063234aa0:	62 61 fd 28 6f b7 20 	vmovdqa64 0x3e20(%rdi),%ymm30
    7f5063234aa7:	3e 00 00 
    7f5063234aaa:	c7 87 24 49 00 00 00 	movl   $0x0,0x4924(%rdi)
    7f5063234ab1:	00 00 00 
    7f5063234ab4:	eb 1b                	jmp    0x7f5063234ad1
    7f5063234ab6:	66 2e 0f 1f 84 00 00 	cs nopw 0x0(%rax,%rax,1)
    7f5063234abd:	00 00 00 
    7f5063234ac0:	ff c0                	inc    %eax
    7f5063234ac2:	89 87 24 49 00 00    	mov    %eax,0x4924(%rdi)
    7f5063234ac8:	83 f8 08             	cmp    $0x8,%eax
    7f5063234acb:	0f 83 af 00 00 00    	jae    0x7f5063234b80
    7f5063234bbb:	0f 8f 7f fc ff ff    	jg     0x7f5063234840
    7f5063234bc1:	62 f1 25 20 76 d9    	vpcmpeqd %ymm1,%ymm27,%k3
    7f5063234bc7:	62 d1 7d ab 6f c2    	vmovdqa32 %ymm10,%ymm0{%k3}{z}
    7f5063234bcd:	c5 fd 6f 97 e0 3b 00 	vmovdqa 0x3be0(%rdi),%ymm2
    7f5063234bd4:	00 
    7f5063234bd5:	62 b3 7d 28 25 d6 70 	vpternlogd $0x70,%ymm22,%ymm0,%ymm2
    7f5063234bdc:	c5 fd 7f 97 e0 3b 00 	vmovdqa %ymm2,0x3be0(%rdi)
    7f5063234be3:	00 
    7f5063234be4:	62 e1 fd 28 7f b7 80 	vmovdqa64 %ymm22,0x2f80(%rdi)
    7f5063234beb:	2f 00 00 
    7f5063234bee:	66 90                	xchg   %ax,%ax
    7f5063234bf0:	c5 fd 6f 9f e0 3b 00 	vmovdqa 0x3be0(%rdi),%ymm3
    7f5063234bf7:	00 
    7f5063234bf8:	62 b3 65 28 1e df 01 	vpcmpltud %ymm23,%ymm3,%k3
    7f5063234bff:	c5                   	.byte 0xc5
