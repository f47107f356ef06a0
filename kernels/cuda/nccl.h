/* Internal: NCCL all-reduces for the participants of a collective that sit
 * on different GPUs of this process (docs/cuda.md, "NCCL collectives"). The
 * CUDA backend's comm_create and allreduce_part; tests/test_cuda_nccl calls
 * them directly. */
#ifndef ND_KERNELS_CUDA_NCCL_H
#define ND_KERNELS_CUDA_NCCL_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "common/error.h"

/* The communicator whose rank i is CUDA device devices[i] (ncclCommInitAll),
 * made at the first request for that list and kept until
 * nd_cuda_comms_free; also makes each rank a communication stream on its device.
 * Returns its number, or a negative ND_E* with err set (NCCL's message). */
int nd_cuda_comm_create(const int *devices, int n, nd_error *err);
/* Rank `rank` of communicator comm: data (n elements, double when f64, else
 * float; on the rank's device) summed in place with its peers. Enqueued on
 * the rank's communication stream, which first waits for what `stream`
 * holds; `stream` then waits for the sum. The calling thread's current
 * device must be the rank's. Returns 0, or the CUDA error, or 1000 + the
 * NCCL error. */
int nd_cuda_allreduce_part(cudaStream_t stream, void *data, int64_t n, int f64, int comm, int rank);
/* Destroys every communicator, stream and event (before StarPU stops). */
void nd_cuda_comms_free(void);

#endif
