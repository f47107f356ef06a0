#!/bin/sh
# The backend rule: the OpenCL backend is visible only inside kernels/opencl/
# and in the list of compiled-in backends (kernels/backends.c). Elsewhere the
# library reaches backends through their ops table (kernels/backend.h), so
# neither ND_HAVE_OPENCL nor OpenCL types appear. Speaks TAP.
S=${ND_SRCDIR:-.}
cd "$S" || exit 1
DIRS="cli common configs data graph include kernels scheduler tasks trace train checkpoint"
found=$(grep -rl --include='*.c' --include='*.h' ND_HAVE_OPENCL $DIRS 2>/dev/null | grep -v '^kernels/opencl/' | grep -v '^kernels/backends\.c$')
if [ -z "$found" ]; then echo "ok 1 - ND_HAVE_OPENCL only in kernels/opencl/ and kernels/backends.c"
else echo "not ok 1 - ND_HAVE_OPENCL outside the OpenCL backend:"; echo "$found" | sed 's/^/#   /'; fi
found=$(grep -rlE --include='*.c' --include='*.h' 'cl_mem|CL/cl\.h|clblast|kernels/opencl/' $DIRS 2>/dev/null | grep -v '^kernels/opencl/' | grep -v '^include/ndgraph/kernel\.h$')
if [ -z "$found" ]; then echo "ok 2 - no OpenCL types or headers outside kernels/opencl/"
else echo "not ok 2 - OpenCL outside its backend:"; echo "$found" | sed 's/^/#   /'; fi
echo "1..2"
