/* cuda_check.cuh: checking every CUDA call and launch (ggml's CUDA_CHECK,
 * cuCollections' sticky-error clearing), returning a gm_status. */
#ifndef GM_CUDA_CHECK_CUH
#define GM_CUDA_CHECK_CUH

#ifdef __CUDACC__
#include <cuda_runtime.h>
#else /* C host code (src/cuda/pipeline.c) */
#include <cuda_runtime_api.h>
#endif
#include <stdio.h>

#include "gmatch.h"

/* Records the failing call text, function, file and line for the caller's
 * message (gm_cuda_last_error), clears the sticky error and returns
 * GM_ERR_DEVICE (GM_ERR_NOMEM for an allocation failure) from the enclosing
 * function, which must return gm_status. */
#ifdef __cplusplus
extern "C"
#endif
void gm_cuda_record_error(cudaError_t e, const char *call, const char *func, const char *file,
                          int line);

/* cudaStreamSynchronize, counted: every wait of a host thread for a stream
 * goes through it, so that gm_cuda_waits can say how often and how long
 * the host waited (device.cu). */
#ifdef __cplusplus
extern "C"
#endif
cudaError_t gm_cuda_stream_wait(cudaStream_t stream);
/* cudaEventSynchronize, counted the same way. */
#ifdef __cplusplus
extern "C"
#endif
cudaError_t gm_cuda_event_wait(cudaEvent_t event);

#define GM_CUDA_CHECK(call)                                                        \
    do {                                                                           \
        cudaError_t gm_e_ = (call);                                                \
        if (gm_e_ != cudaSuccess) {                                                \
            gm_cuda_record_error(gm_e_, #call, __func__, __FILE__, __LINE__);      \
            return gm_e_ == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE; \
        }                                                                          \
    } while (0)

/* After every kernel launch: the launch error (bad configuration) now, and
 * under GMATCH_CUDA_SYNC_CHECK=1 also the execution error. */
#ifdef __cplusplus
extern "C"
#endif
cudaError_t gm_cuda_launched(void); /* gm_cuda.h: cudaGetLastError or an injected fault */
#define GM_CUDA_CHECK_LAUNCH() GM_CUDA_CHECK(gm_cuda_launched())

#ifdef __CUDACC__
/* Lets `kernel` take as much dynamic shared memory as the current device
 * allows a block past the default 48 KiB (its opt-in maximum less the
 * kernel's static shared memory); *max_smem set to that opt-in maximum.
 * The attribute is the kernel's, shared by every host thread, so it is
 * always raised to the one value, never to a launch's own need: with the
 * need, a thread lowering it between another's raise and launch made that
 * launch fail ("too many resources requested for launch", a 1080p video
 * under 8 workers, 2026-11-28).  Set once a device: done is the caller's
 * array of GM_SMEM_DEVICES flags for this kernel (static, zeroed), a
 * device's set once its attribute is (a device past the array sets it at
 * every call); two threads that both find it unset set the same value. */
#define GM_SMEM_DEVICES 64
template <typename K>
static inline cudaError_t gm_cuda_smem_optin(K kernel, int *done, int *max_smem)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    const int known = dev >= 0 && dev < GM_SMEM_DEVICES;
    if (e != cudaSuccess || (known && __atomic_load_n(&done[dev], __ATOMIC_ACQUIRE)))
        return e;
    cudaFuncAttributes fa;
    e = cudaFuncGetAttributes(&fa, kernel);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 *max_smem - (int)fa.sharedSizeBytes);
    if (e == cudaSuccess && known)
        __atomic_store_n(&done[dev], 1, __ATOMIC_RELEASE);
    return e;
}
#endif

/* Chains of calls that must all succeed (allocations, then their use):
 * `err` (a cudaError_t, cudaSuccess at first) keeps the first failure, which
 * is recorded as GM_CUDA_CHECK records it; the calls after it are skipped.
 * gm_cuda_status(err) is then the status to return. */
#define GM_CUDA_TRY(err, call)                                                     \
    do {                                                                           \
        if ((err) == cudaSuccess && ((err) = (call)) != cudaSuccess)               \
            gm_cuda_record_error((err), #call, __func__, __FILE__, __LINE__);      \
    } while (0)

static inline gm_status gm_cuda_status(cudaError_t e)
{
    return e == cudaSuccess ? GM_OK : e == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE;
}

#endif
