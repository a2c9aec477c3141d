/* Shared by the C tests: CHECK ends the job with a message naming the PE,
 * the file and line when a condition does not hold. */
#ifndef VKSHMEM_TEST_CHECK_H
#define VKSHMEM_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <shmem.h>

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), \
                    __FILE__, __LINE__, #cond);                              \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
            fflush(NULL);                                                    \
            shmem_global_exit(1);                                            \
        }                                                                    \
    } while (0)

/* The C types of the standard RMA table, as X(TYPENAME, TYPE). */
#define RMA_TYPES(X)                                                         \
    X(float, float) X(double, double) X(longdouble, long double)             \
    X(char, char) X(schar, signed char) X(short, short) X(int, int)          \
    X(long, long) X(longlong, long long) X(uchar, unsigned char)             \
    X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)  \
    X(ulonglong, unsigned long long) X(int8, int8_t) X(int16, int16_t)       \
    X(int32, int32_t) X(int64, int64_t) X(uint8, uint8_t)                    \
    X(uint16, uint16_t) X(uint32, uint32_t) X(uint64, uint64_t)              \
    X(size, size_t) X(ptrdiff, ptrdiff_t)

/* A value every type holds exactly, different per PE and index. */
#define VAL(T, pe, i) ((T)(((pe) * 37 + (i) * 11 + 5) % 101))

#endif
