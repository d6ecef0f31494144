# mk/print-cuda.mk - prints HAVE_CUDA as mk/common.mk decides it (for
# scripts that must agree with the Makefiles): make -s -f mk/print-cuda.mk
TOP := .
include $(TOP)/mk/common.mk
print:
	@echo $(HAVE_CUDA)
