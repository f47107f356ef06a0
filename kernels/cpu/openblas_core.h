/* OpenBLAS's kernel set (kernels/cpu/openblas_core.c). */
#ifndef ND_KERNELS_CPU_OPENBLAS_CORE_H
#define ND_KERNELS_CPU_OPENBLAS_CORE_H

/* The kernel set this CPU runs best when OpenBLAS chose one older than AVX2
 * for it and OPENBLAS_CORETYPE is unset; NULL otherwise. */
const char *nd__blas_better_core(void);

#endif
