/* registry.c: the backends of a build with CUDA (CMake compiles this file
 * instead of pipeline/registry_cpu.c): CUDA's, then the CPU's. */
#include "pipeline/backend.h"

extern const gm_backend_ops gm_backend_cuda;

const gm_backend_ops *const gm_backends[] = {&gm_backend_cuda, &gm_backend_cpu, NULL};
