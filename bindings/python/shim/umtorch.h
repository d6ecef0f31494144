/* SPDX-License-Identifier: MIT */
/*
 * umtorch.h - libumtorch.so, a CUDAPluggableAllocator for PyTorch on libum.
 *
 * torch.cuda.memory.CUDAPluggableAllocator loads a shared object and calls
 * two functions of it for every CUDA allocation; these are they. An
 * allocation of 1 MiB or more is one libum region (kind GENERIC, named
 * "umtorch.alloc"), acquired on the device for its whole life, so its
 * pointer is stable and its bytes count on the same per-device budget as
 * the regions the trainer releases (optimizer state): when torch needs
 * memory, libum evicts those. Smaller ones are blocks of a sub-allocator
 * per device (um_suballoc_create(3)) whose segments, regions named
 * "umtorch.small" held on the device, stay cached when empty, as torch's
 * caching allocator keeps its blocks (given back when a region would not
 * fit beside what the device holds, and at detach); a block freed on a
 * stream is reused there at once, elsewhere once the stream's work at the
 * free is done.
 *
 * The allocator uses the context handed to um_torch_attach() (umtorch's
 * Context does that), else one it creates from the LIBUM_* environment on
 * the first allocation. torch gives the functions no way to fail but a NULL
 * pointer, so every failure is recorded: um_torch_last_error() is the
 * calling thread's -errno of its last call, um_torch_error_count() counts
 * failures. Nothing is printed.
 */
#ifndef UMTORCH_H
#define UMTORCH_H

#include <stdint.h>
#include <sys/types.h>

#include <um.h>

/* NULL on failure (then see um_torch_last_error) and for size 0. */
void *um_torch_malloc(ssize_t size, int device, void *stream);
/*
 * Frees what um_torch_malloc returned. NULL is a no-op. Refused (nothing
 * freed, the error recorded): an unknown or already freed pointer
 * (-ENOENT), a pointer inside an allocation, a region this allocator did
 * not make, a size other than the allocation's (-EINVAL).
 */
void um_torch_free(void *ptr, ssize_t size, int device, void *stream);

/* Use ctx from now on; -EBUSY while allocations live in another context. */
int um_torch_attach(struct um_context *ctx);
/*
 * Forget the context (destroying it if the allocator created it); -EBUSY
 * while allocations are alive.
 */
int um_torch_detach(void);
/* The calling thread's last malloc/free result: 0 or -errno. */
int um_torch_last_error(void);
uint64_t um_torch_error_count(void);
/* Allocations alive now. */
int64_t um_torch_live(void);

#endif /* UMTORCH_H */
