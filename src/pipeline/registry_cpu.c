/* registry_cpu.c: the backends of a build without CUDA: the CPU's alone
 * (CMake compiles this file or cuda/registry.c, never both). */
#include "pipeline/backend.h"

const gm_backend_ops *const gm_backends[] = {&gm_backend_cpu, NULL};

/* no GPU to configure (gmatch.h) */
gm_status gm_cuda_set_sync(gm_cuda_sync mode)
{
    (void)mode;
    return GM_ERR_UNSUPPORTED;
}

gm_status gm_cuda_waits(uint64_t *count, double *ms)
{
    if (count)
        *count = 0;
    if (ms)
        *ms = 0;
    return GM_ERR_UNSUPPORTED;
}

gm_status gm_cuda_fault_inject(const char *spec)
{
    (void)spec;
    return GM_ERR_UNSUPPORTED;
}
