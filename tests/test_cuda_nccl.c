/* NCCL all-reduces (kernels/cuda/nccl.c) on the GPUs of this machine: a
 * communicator over every device (one rank on a one-GPU machine), each rank
 * driven from a thread of its own as StarPU drives its devices, against the
 * ordered sum of the parts computed on the host (bit for bit with one rank,
 * within 1e-6 relative with several: NCCL's ring adds in another order);
 * two ranks on one device (NCCL normally refuses them: its message is
 * printed); and through StarPU: the NCCL participant's codelet in the global
 * order of collectives (tasks/collective.c) on the CUDA worker, with
 * runtime.tf32 on every worker's cuBLAS handle. Skipped, with the reason,
 * where there is no CUDA device. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <starpu.h>
#include <starpu_cublas_v2.h>
#include <string.h>
#include <unistd.h>

#include "configs/config.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda.h"
#include "kernels/cuda/nccl.h"
#include "tasks/collective.h"
#include "tasks/exec.h"
#include "tests/tap.h"

#define N        (1 << 20)
#define MAX_DEVS 16

static uint64_t rng = 0x9e3779b97f4a7c15u;

/* a value in +-[2^-10, 2^10]: the order of a sum shows in its bits */
static float value(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 3 & 1 ? -1 : 1) * ldexp(1.0 + (double)(rng >> 11) * 0x1.0p-53, (int)(rng % 21) - 10));
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "not ok - an NCCL all-reduce did not end in 300 s (hang)\n";
  if (write(1, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(1);
}

typedef struct rank_run {
  int dev, comm, rank, rc;
  float *host; /* in: the part; out: the sum */
} rank_run;

/* one rank: its device's stream, the all-reduce, the result back */
static void *run_rank(void *arg) {
  rank_run *r = arg;
  void *d = NULL;
  cudaStream_t s = NULL;
  r->rc = (int)cudaSetDevice(r->dev);
  if (!r->rc) r->rc = (int)cudaStreamCreate(&s);
  if (!r->rc) r->rc = (int)cudaMalloc(&d, N * sizeof(float));
  if (!r->rc) r->rc = (int)cudaMemcpy(d, r->host, N * sizeof(float), cudaMemcpyHostToDevice);
  if (!r->rc) r->rc = nd_cuda_allreduce_part(s, d, N, 0, r->comm, r->rank);
  if (!r->rc) r->rc = (int)cudaStreamSynchronize(s);
  if (!r->rc) r->rc = (int)cudaMemcpy(r->host, d, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (s) cudaStreamDestroy(s);
  return NULL;
}

/* An all-reduce over communicator comm whose rank i is devs[i]: 0 when
 * every rank ran; *bitwise: all equal the ordered sum bit for bit; *rel:
 * the largest relative L2 error against it. out (n * N) gets the results. */
static int allreduce(int comm, const int *devs, int n, float *out, int *bitwise, double *rel) {
  static float in[MAX_DEVS][N];
  rank_run r[MAX_DEVS];
  pthread_t th[MAX_DEVS];
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < N; j++) in[i][j] = value();
    memcpy(out + (size_t)i * N, in[i], N * sizeof(float));
    r[i] = (rank_run){devs[i], comm, i, 0, out + (size_t)i * N};
    pthread_create(&th[i], NULL, run_rank, &r[i]);
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    if (r[i].rc) diag("rank %d on device %d: error %d", i, devs[i], r[i].rc), rc = -1;
  }
  *bitwise = 1;
  *rel = 0;
  for (int i = 0; i < n && !rc; i++) {
    double num = 0, den = 0;
    for (int j = 0; j < N; j++) {
      float s = in[0][j];
      for (int p = 1; p < n; p++) s += in[p][j];
      float got = out[(size_t)i * N + j];
      *bitwise &= memcmp(&s, &got, sizeof s) == 0;
      num += ((double)got - s) * ((double)got - s), den += (double)s * s;
    }
    if (sqrt(num / den) > *rel) *rel = sqrt(num / den);
  }
  return rc;
}

static void direct(int ndev) {
  static float out[MAX_DEVS * (size_t)N], again[MAX_DEVS * (size_t)N];
  int devs[MAX_DEVS], bitwise;
  double rel;
  nd_error err = {0};
  for (int i = 0; i < ndev; i++) devs[i] = i;
  int comm = nd_cuda_comm_create(devs, ndev, &err);
  if (!ok(comm >= 0, "a communicator over the %d GPU%s of this machine%s%s", ndev, ndev == 1 ? "" : "s",
          comm < 0 ? ": " : "", comm < 0 ? err.msg : ""))
    return;
  ok(nd_cuda_comm_create(devs, ndev, &err) == comm, "the same list of devices gives the same communicator");
  int rc = allreduce(comm, devs, ndev, out, &bitwise, &rel);
  if (ndev == 1)
    ok(rc == 0 && bitwise, "1-rank all-reduce: the part itself, bit for bit");
  else
    ok(rc == 0 && rel <= 1e-6, "%d-rank all-reduce against the ordered sum: relative error %.2e (tolerance 1e-6)%s",
       ndev, rel, bitwise ? ", bit for bit" : "");
  if (ndev > 1) {
    uint64_t keep = rng;
    rng = 0x9e3779b97f4a7c15u;
    allreduce(comm, devs, ndev, again, &bitwise, &rel);
    rng = keep;
    diag("NCCL %d ranks, same inputs twice: %s", ndev,
         memcmp(out, again, (size_t)ndev * N * sizeof(float)) == 0 ? "identical bits" : "different bits");
  }
  /* two ranks on device 0: NCCL's answer */
  int dup[2] = {0, 0};
  int c2 = nd_cuda_comm_create(dup, 2, &err);
  if (c2 < 0) {
    /* ncclInvalidUsage ("Duplicate GPU detected" in NCCL's own warning) */
    ok(strstr(err.msg, "invalid usage") != NULL, "two ranks on one device: NCCL refuses them as invalid usage: %s",
       err.msg);
  } else {
    rc = allreduce(c2, dup, 2, out, &bitwise, &rel);
    ok(rc == 0 && rel <= 1e-6, "NCCL accepted two ranks on device 0: all-reduce relative error %.2e", rel);
  }
}

/* ------------------------------------------------------------- through StarPU */

static void check_math(void *arg) {
  cublasMath_t m = CUBLAS_DEFAULT_MATH;
  cublasGetMathMode(starpu_cublas_get_local_handle(), &m);
  if (m != CUBLAS_TF32_TENSOR_OP_MATH) (*(int *)arg)++;
}

static void through_starpu(void) {
  nd_config *cfg = NULL;
  nd_error err = {0};
  if (nd_config_new(&cfg) || nd_config_set_assignment(cfg, "runtime.cuda_devices=1", &err) ||
      nd_config_set_assignment(cfg, "runtime.tf32=true", &err) ||
      nd_config_set_assignment(cfg, "runtime.workers=2", &err) || nd_runtime_start(cfg, &err)) {
    ok(0, "StarPU with one CUDA device and runtime.tf32: %s", err.msg);
    nd_config_free(cfg);
    return;
  }
  int not_tf32 = 0;
  starpu_execute_on_each_worker(check_math, &not_tf32, STARPU_CUDA);
  ok(not_tf32 == 0, "runtime.tf32: every CUDA worker's cuBLAS handle in TF32 tensor-op mode");
  char name[128] = "";
  const nd_backend_ops *cuda = nd__backend(ND_BACKEND_CUDA);
  ok(cuda->describe(0, name, sizeof name) == 0 && name[0], "the run header's name of device 0: %s", name);
  ok(cuda->describe(4096, name, sizeof name) == -1, "no name for a device that does not exist");

  /* three 1-rank collectives in a row on the CUDA worker: each leaves the data as it is */
  int dev0 = 0, comm = nd_cuda_comm_create(&dev0, 1, &err);
  static float data[N], want[N];
  for (int i = 0; i < N; i++) data[i] = want[i] = value();
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)data, N, sizeof(float));
  nd_task t = {.kind = ND_TASK_ALLREDUCE};
  t.a.coll = (struct nd_coll_args){.n = N, .nparts = 1, .dtype = ND_F32};
  nd__task_ctx ctx = {.task = &t};
  nd__coll_part part = {&ctx, comm, 0};
  void *arg = &part;
  int worker = starpu_worker_get_by_type(STARPU_CUDA_WORKER, 0), rc = comm < 0 ? comm : 0;
  for (int k = 0; k < 3 && !rc; k++) rc = nd__coll_submit(nd__coll_device_codelet(), &h, &worker, &arg, 1, NULL, NULL);
  starpu_task_wait_for_all();
  starpu_data_acquire(h, STARPU_R);
  ok(rc == 0 && nd__kernel_failure(NULL, &err) == 0 && memcmp(data, want, sizeof data) == 0,
     "3 NCCL collectives of one rank through StarPU's CUDA worker, chained by the token: data unchanged%s%s",
     rc ? ": " : "", rc ? err.msg : "");
  starpu_data_release(h);
  starpu_data_unregister(h);
  nd_runtime_stop();
  nd_config_free(cfg);
}

int main(void) {
  int n = nd_cuda_device_count();
  if (n == 0) {
    skip("NCCL all-reduce against the ordered sum: no CUDA device on this machine (scripts/gpu-check.sh runs it on "
         "one)");
    return done_testing();
  }
  if (n > MAX_DEVS) n = MAX_DEVS;
  setenv("STARPU_SILENT", "1", 0);
  signal(SIGALRM, on_alarm);
  alarm(300);
  direct(n);
  through_starpu();
  return done_testing();
}
