//go:build !purego

#include "textflag.h"

// func prefetchWords(base *uint64, idx *uint64, n int)
TEXT ·prefetchWords(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ base+0(FP), AX
	MOVQ idx+8(FP), BX
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JLE done

loop:
	MOVQ (BX), DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ $8, BX
	DECQ CX
	JNZ loop

done:
	RET

// func prefetchKeyData(keys *[]byte, n int)
TEXT ·prefetchKeyData(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ keys+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE kdone

kloop:
	MOVQ (AX), DX // the slice's data pointer
	PREFETCHT0 (DX)
	ADDQ $24, AX  // the next slice header
	DECQ CX
	JNZ kloop

kdone:
	RET
