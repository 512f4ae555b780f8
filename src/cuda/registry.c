/* registry.c: the backends of a build with CUDA (CMake compiles this file
 * instead of pipeline/registry_cpu.c). */
#include "pipeline/backend.h"

extern const gm_backend_ops gm_backend_cuda;

const gm_backend_ops *gm_backend_find(gm_device d)
{
    return d == GM_DEVICE_CUDA ? &gm_backend_cuda : &gm_backend_cpu;
}
