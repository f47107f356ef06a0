#!/bin/sh
# The backend rule: each device backend (OpenCL, CUDA) is visible only inside
# its folder and in the list of compiled-in backends (kernels/backends.c).
# Elsewhere the library reaches backends through their ops table
# (kernels/backend.h), so neither ND_HAVE_OPENCL / ND_HAVE_CUDA nor the
# backend's types, headers or StarPU's calls for it appear; the public
# kernel header may name the queue types a plugin receives. Speaks TAP.
S=${ND_SRCDIR:-.}
cd "$S" || exit 1
DIRS="cli common configs data graph include kernels placement scheduler sim tasks trace train checkpoint"
found=$(grep -rl --include='*.c' --include='*.h' ND_HAVE_OPENCL $DIRS 2>/dev/null | grep -v '^kernels/opencl/' | grep -v '^kernels/backends\.c$')
if [ -z "$found" ]; then echo "ok 1 - ND_HAVE_OPENCL only in kernels/opencl/ and kernels/backends.c"
else echo "not ok 1 - ND_HAVE_OPENCL outside the OpenCL backend:"; echo "$found" | sed 's/^/#   /'; fi
found=$(grep -rlE --include='*.c' --include='*.h' 'cl_mem|CL/cl\.h|clblast|kernels/opencl/' $DIRS 2>/dev/null | grep -v '^kernels/opencl/' | grep -v '^include/ndgraph/kernel\.h$')
if [ -z "$found" ]; then echo "ok 2 - no OpenCL types or headers outside kernels/opencl/"
else echo "not ok 2 - OpenCL outside its backend:"; echo "$found" | sed 's/^/#   /'; fi
found=$(grep -rl --include='*.c' --include='*.h' ND_HAVE_CUDA $DIRS 2>/dev/null | grep -v '^kernels/cuda/' | grep -v '^kernels/backends\.c$')
if [ -z "$found" ]; then echo "ok 3 - ND_HAVE_CUDA only in kernels/cuda/ and kernels/backends.c"
else echo "not ok 3 - ND_HAVE_CUDA outside the CUDA backend:"; echo "$found" | sed 's/^/#   /'; fi
found=$(grep -rlE --include='*.c' --include='*.h' 'cudaStream_t|cuda_runtime|cublas|nccl\.h|ncclComm|kernels/cuda/|STARPU_USE_CUDA|starpu_cuda_|starpu_cublas' $DIRS 2>/dev/null |
  grep -v '^kernels/cuda/' | grep -v '^kernels/backends\.c$' | grep -v '^include/ndgraph/kernel\.h$')
if [ -z "$found" ]; then echo "ok 4 - no CUDA, cuBLAS or NCCL types, headers or StarPU CUDA calls outside kernels/cuda/"
else echo "not ok 4 - CUDA outside its backend:"; echo "$found" | sed 's/^/#   /'; fi
# outside kernels/, no source names the CUDA backend at all but the one
# device enum, the table of device kinds, the configuration key and the build
# (docs/adding-a-backend.md): every other layer reaches it through its ops
allowed='^(include/ndgraph/kernel\.h|common/device\.c|configs/keys\.c)$'
found=$(grep -rlE --include='*.c' --include='*.h' --include='*.cu' 'cuda|CUDA|nccl|NCCL' $DIRS 2>/dev/null |
  grep -v '^kernels/' | grep -vE "$allowed")
if [ -z "$found" ]; then echo "ok 5 - outside kernels/, only the device enum, common/device.c and the configuration key name CUDA"
else echo "not ok 5 - sources outside kernels/ that name CUDA or NCCL:"; echo "$found" | sed 's/^/#   /'; fi
echo "1..5"
