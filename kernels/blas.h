/* The CPU backend's BLAS, as the runtime starts it (kernels/cpu/openblas_core.c):
 * outside kernels/ nothing names the BLAS. */
#ifndef ND_KERNELS_BLAS_H
#define ND_KERNELS_BLAS_H

/* One BLAS thread for each thread that calls it: StarPU's workers are the
 * parallelism. */
void nd__blas_one_thread(void);

/* The kernel set this CPU runs best when OpenBLAS chose one older than AVX2
 * for it and OPENBLAS_CORETYPE is unset; NULL otherwise. */
const char *nd__blas_better_core(void);

#endif
