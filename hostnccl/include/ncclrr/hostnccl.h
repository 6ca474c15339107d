/* Host NCCL: the NCCL 2.28 API implemented on the CPU (libncclrr-hostnccl.so, and the same code
 * with SONAME libnccl.so.2 in build/lib/hostnccl/). This header adds the few calls a program needs
 * because there is no CUDA runtime: host streams and a way to tell which NCCL got loaded.
 *
 * Device buffers are plain host memory. A cudaStream_t is an opaque handle of a host stream: a
 * FIFO of NCCL work. Any non-null value names a stream (values never seen before become new
 * streams); the null stream is the default stream of the calling rank's device. NCCL calls enqueue
 * and return; ncclrrHostStreamSynchronize waits until the stream's work is done. docs/hostnccl.md
 * describes the semantics. */
#ifndef NCCLRR_HOSTNCCL_H_
#define NCCLRR_HOSTNCCL_H_

#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 1. Declare it weak to learn whether the NCCL in the process is the host one. */
int ncclrrHostIsHostNccl(void);

/* A new host stream (never null). */
cudaStream_t ncclrrHostStreamCreate(void);

/* Waits until all work enqueued on the stream so far has finished. Returns the first error of that
 * work (then clears it), e.g. ncclRemoteError when a collective timed out or a peer aborted. The
 * null stream means every stream of this process. */
ncclResult_t ncclrrHostStreamSynchronize(cudaStream_t stream);

/* Synchronizes, then forgets the stream. */
void ncclrrHostStreamDestroy(cudaStream_t stream);

/* 1 while the stream has unfinished work (like cudaStreamQuery returning cudaErrorNotReady). */
int ncclrrHostStreamBusy(cudaStream_t stream);

/* Runs fn(arg) on a driving thread once all work enqueued on the stream before it has finished,
 * and before any work enqueued after it starts (like cudaLaunchHostFunc). The null stream is the
 * default stream of `device`. fn must not call NCCL. */
void ncclrrHostStreamAddCallback(cudaStream_t stream, int device, void (*fn)(void*), void* arg);

/* The device that communicators initialized by this thread report through ncclCommCuDevice and
 * whose default stream the null stream names (like cudaSetDevice). Unset: the rank. */
void ncclrrHostSetDevice(int device);

#ifdef __cplusplus
}
#endif

#endif /* NCCLRR_HOSTNCCL_H_ */
