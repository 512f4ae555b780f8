/* common.c: the one definition common.h declares. */
#include "common/common.h"

_Thread_local int gm_thread_budget;
