# kernels/opencl: the OpenCL backend (CLBlast GEMMs, OpenCL C kernels), built
# when configure finds OpenCL and CLBlast. kernels.cl is embedded as a string.
EXTRA_DIST += kernels/opencl/kernels.cl
if ND_OPENCL
libndgraph_internal_la_SOURCES += kernels/opencl/opencl.h kernels/opencl/program.c kernels/opencl/gemm.c \
	kernels/opencl/backend.c kernels/opencl/check.c
BUILT_SOURCES += kernels/opencl/source.inc
CLEANFILES += kernels/opencl/source.inc
kernels/opencl/source.inc: $(top_srcdir)/kernels/opencl/kernels.cl
	$(AM_V_GEN)$(MKDIR_P) kernels/opencl && \
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $(top_srcdir)/kernels/opencl/kernels.cl > $@-t && mv $@-t $@
endif
