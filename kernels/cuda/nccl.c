/* NCCL all-reduces across the GPUs of this process (docs/cuda.md). One
 * communicator per list of devices a graph's collectives need, created with
 * ncclCommInitAll before any task runs; each rank of it gets a
 * communication stream of its own on its device, so that a spinning NCCL
 * kernel never sits on a StarPU stream with compute queued behind it (nor
 * on a peer rank's stream, should NCCL accept two ranks on one device),
 * chained to the worker's stream by two events (inputs ready, sum done). */
#include "kernels/cuda/nccl.h"

#include <nccl.h>
#include <pthread.h>
#include <string.h>

#define ND_NCCL_MAX_COMMS 64
#define ND_NCCL_MAX_RANKS 64

typedef struct comm {
  int n;
  int dev[ND_NCCL_MAX_RANKS];
  ncclComm_t c[ND_NCCL_MAX_RANKS];
  cudaStream_t stream[ND_NCCL_MAX_RANKS];
  cudaEvent_t ready[ND_NCCL_MAX_RANKS], done[ND_NCCL_MAX_RANKS];
} comm;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static comm comms[ND_NCCL_MAX_COMMS];
static int n_comms;

static int find(const int *devices, int n) {
  for (int i = 0; i < n_comms; i++)
    if (comms[i].n == n && memcmp(comms[i].dev, devices, (size_t)n * sizeof *devices) == 0) return i;
  return -1;
}

/* rank r's stream and events, made on its device; the slots not made stay NULL */
static cudaError_t make_rank(comm *c, int r) {
  int prev = 0;
  cudaError_t e = cudaGetDevice(&prev);
  if (!e) e = cudaSetDevice(c->dev[r]);
  if (!e) e = cudaStreamCreateWithFlags(&c->stream[r], cudaStreamNonBlocking);
  if (!e) e = cudaEventCreateWithFlags(&c->ready[r], cudaEventDisableTiming);
  if (!e) e = cudaEventCreateWithFlags(&c->done[r], cudaEventDisableTiming);
  cudaSetDevice(prev);
  return e;
}

static void free_comm(comm *c, int with_nccl) {
  for (int r = 0; r < c->n; r++) {
    if (with_nccl) ncclCommDestroy(c->c[r]);
    if (c->ready[r]) cudaEventDestroy(c->ready[r]);
    if (c->done[r]) cudaEventDestroy(c->done[r]);
    if (c->stream[r]) cudaStreamDestroy(c->stream[r]);
  }
  memset(c, 0, sizeof *c);
}

int nd_cuda_comm_create(const int *devices, int n, nd_error *err) {
  if (n < 1 || n > ND_NCCL_MAX_RANKS) return nd__fail(err, ND_EINVAL, "NCCL: a communicator over %d GPUs", n);
  pthread_mutex_lock(&lock);
  int rc = find(devices, n);
  if (rc >= 0) goto done;
  if (n_comms == ND_NCCL_MAX_COMMS) {
    rc = nd__fail(err, ND_ERUNTIME, "NCCL: more than %d communicators", ND_NCCL_MAX_COMMS);
    goto done;
  }
  comm *c = &comms[n_comms];
  memset(c, 0, sizeof *c);
  c->n = n;
  memcpy(c->dev, devices, (size_t)n * sizeof *devices);
  for (int r = 0; r < n; r++) {
    cudaError_t e = make_rank(c, r);
    if (e) {
      rc = nd__fail(err, ND_ERUNTIME, "NCCL: CUDA device %d: %s", devices[r], cudaGetErrorString(e));
      free_comm(c, 0);
      goto done;
    }
  }
  ncclResult_t r = ncclCommInitAll(c->c, n, devices);
  if (r != ncclSuccess) {
    rc = nd__fail(err, ND_ERUNTIME, "NCCL: cannot create a communicator over %d ranks (devices %d%s): %s", n,
                  devices[0], n > 1 ? ", ..." : "", ncclGetErrorString(r));
    free_comm(c, 0);
    goto done;
  }
  rc = n_comms++;
done:
  pthread_mutex_unlock(&lock);
  return rc;
}

int nd_cuda_allreduce_part(cudaStream_t stream, void *data, int64_t n, int f64, int comm_id, int rank) {
  const comm *c = &comms[comm_id];
  cudaError_t e = cudaEventRecord(c->ready[rank], stream);
  if (!e) e = cudaStreamWaitEvent(c->stream[rank], c->ready[rank], 0);
  if (e) return (int)e;
  ncclResult_t r =
      ncclAllReduce(data, data, (size_t)n, f64 ? ncclDouble : ncclFloat, ncclSum, c->c[rank], c->stream[rank]);
  if (r != ncclSuccess) return 1000 + (int)r;
  e = cudaEventRecord(c->done[rank], c->stream[rank]);
  if (!e) e = cudaStreamWaitEvent(stream, c->done[rank], 0);
  return (int)e;
}

void nd_cuda_comms_free(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_comms; i++) free_comm(&comms[i], 1);
  n_comms = 0;
  pthread_mutex_unlock(&lock);
}
