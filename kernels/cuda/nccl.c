/* NCCL all-reduces across the GPUs of this process (docs/cuda.md). One
 * communicator per list of devices a graph's collectives need, created with
 * ncclCommInitAll before any task runs; each device gets one communication
 * stream, so that a spinning NCCL kernel never sits on a StarPU stream with
 * compute queued behind it, chained to the worker's stream by two events
 * (inputs ready, sum done). Only one collective is in flight at a time
 * (tasks/collective.c chains them), so one pair of events per device does. */
#include "kernels/cuda/nccl.h"

#include <nccl.h>
#include <pthread.h>
#include <string.h>

#define ND_NCCL_MAX_COMMS 64
#define ND_NCCL_MAX_DEVS  64

typedef struct comm {
  int n;
  int dev[ND_NCCL_MAX_DEVS];
  ncclComm_t c[ND_NCCL_MAX_DEVS];
} comm;

typedef struct side {
  int made;
  cudaStream_t stream;
  cudaEvent_t ready, done;
} side;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static comm comms[ND_NCCL_MAX_COMMS];
static int n_comms;
static side sides[ND_NCCL_MAX_DEVS];

/* device d's communication stream and events, made on d */
static cudaError_t make_side(int d) {
  if (sides[d].made) return cudaSuccess;
  int prev = 0;
  cudaError_t e = cudaGetDevice(&prev);
  if (!e) e = cudaSetDevice(d);
  if (!e) e = cudaStreamCreateWithFlags(&sides[d].stream, cudaStreamNonBlocking);
  if (!e) e = cudaEventCreateWithFlags(&sides[d].ready, cudaEventDisableTiming);
  if (!e) e = cudaEventCreateWithFlags(&sides[d].done, cudaEventDisableTiming);
  if (!e) sides[d].made = 1;
  cudaSetDevice(prev);
  return e;
}

static int find(const int *devices, int n) {
  for (int i = 0; i < n_comms; i++)
    if (comms[i].n == n && memcmp(comms[i].dev, devices, (size_t)n * sizeof *devices) == 0) return i;
  return -1;
}

int nd_cuda_comm_create(const int *devices, int n, nd_error *err) {
  if (n < 1 || n > ND_NCCL_MAX_DEVS) return nd__fail(err, ND_EINVAL, "NCCL: a communicator over %d GPUs", n);
  pthread_mutex_lock(&lock);
  int rc = find(devices, n);
  if (rc >= 0) goto done;
  if (n_comms == ND_NCCL_MAX_COMMS) {
    rc = nd__fail(err, ND_ERUNTIME, "NCCL: more than %d communicators", ND_NCCL_MAX_COMMS);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    cudaError_t e = devices[i] >= 0 && devices[i] < ND_NCCL_MAX_DEVS ? make_side(devices[i]) : cudaErrorInvalidDevice;
    if (e) {
      rc = nd__fail(err, ND_ERUNTIME, "NCCL: CUDA device %d: %s", devices[i], cudaGetErrorString(e));
      goto done;
    }
  }
  comm *c = &comms[n_comms];
  ncclResult_t r = ncclCommInitAll(c->c, n, devices);
  if (r != ncclSuccess) {
    rc = nd__fail(err, ND_ERUNTIME, "NCCL: cannot create a communicator over %d ranks (devices %d%s): %s", n,
                  devices[0], n > 1 ? ", ..." : "", ncclGetErrorString(r));
    goto done;
  }
  c->n = n;
  memcpy(c->dev, devices, (size_t)n * sizeof *devices);
  rc = n_comms++;
done:
  pthread_mutex_unlock(&lock);
  return rc;
}

int nd_cuda_allreduce_part(cudaStream_t stream, void *data, int64_t n, int f64, int comm_id, int rank) {
  const comm *c = &comms[comm_id];
  const side *s = &sides[c->dev[rank]];
  cudaError_t e = cudaEventRecord(s->ready, stream);
  if (!e) e = cudaStreamWaitEvent(s->stream, s->ready, 0);
  if (e) return (int)e;
  ncclResult_t r = ncclAllReduce(data, data, (size_t)n, f64 ? ncclDouble : ncclFloat, ncclSum, c->c[rank], s->stream);
  if (r != ncclSuccess) return 1000 + (int)r;
  e = cudaEventRecord(s->done, s->stream);
  if (!e) e = cudaStreamWaitEvent(stream, s->done, 0);
  return (int)e;
}

void nd_cuda_comms_free(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_comms; i++)
    for (int r = 0; r < comms[i].n; r++) ncclCommDestroy(comms[i].c[r]);
  n_comms = 0;
  for (int d = 0; d < ND_NCCL_MAX_DEVS; d++)
    if (sides[d].made) {
      cudaEventDestroy(sides[d].ready);
      cudaEventDestroy(sides[d].done);
      cudaStreamDestroy(sides[d].stream);
      sides[d].made = 0;
    }
  pthread_mutex_unlock(&lock);
}
