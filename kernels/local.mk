# kernels: files of this folder, included by the top-level Makefile.am.
libndgraph_internal_la_SOURCES += common/bf16.h kernels/cpu/kernels.h kernels/cpu/simd_exp.h kernels/cpu/lanes.h kernels/cpu/clones.h \
	kernels/cpu/matmul.c kernels/cpu/bf16.c kernels/cpu/layernorm.c kernels/cpu/attention.c kernels/cpu/ring.c \
	kernels/cpu/gelu.c kernels/cpu/residual.c kernels/cpu/embedding.c \
	kernels/cpu/crossentropy.c kernels/cpu/adamw.c kernels/cpu/reduce.c \
	kernels/cpu/rmsnorm.c kernels/cpu/rope.c kernels/cpu/swiglu.c kernels/cpu/kv_attention.c \
	kernels/cpu/openblas_core.c
# the backend interface, the compiled-in backends (cpu, opencl), the kernel
# table and plugins (include/ndgraph/kernel.h), their start-up probe in a
# child process and the guard around their calls
libndgraph_internal_la_SOURCES += kernels/backend.h kernels/blas.h kernels/backends.c kernels/cpu/backend.c \
	kernels/device.h kernels/device.c kernels/registry.h kernels/registry.c kernels/layout.c kernels/plugin.c kernels/check.c kernels/reference.h kernels/reference.c kernels/plugin_check.c \
	kernels/probe.h kernels/probe.c kernels/guard.h kernels/guard.c
libndgraph_internal_la_LIBADD += -ldl
ndgraphinclude_HEADERS += include/ndgraph/kernel.h
include kernels/opencl/local.mk
include kernels/cuda/local.mk
