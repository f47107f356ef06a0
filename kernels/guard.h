/* Internal: a plugin kernel that kills the process while a task runs it
 * (a fault, an abort, exit()) leaves one line naming the plugin and the
 * kernel. The start-up probe (kernels/probe.h) catches what the first call
 * shows; this is for the calls after it, on the workers. */
#ifndef ND_KERNELS_GUARD_H
#define ND_KERNELS_GUARD_H

#include "kernels/registry.h"

/* Around a call of slot s for kind on this thread. Built-ins are not
 * marked. The first plugin kernel installs the process's handlers for
 * SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (each then goes on to the
 * handler it replaced, or the default action: a sanitizer still reports)
 * and an exit check (a kernel's exit() ends the process with status 1). */
void nd__guard_enter(const nd__kernel_slot *s, enum nd_task_kind kind);
void nd__guard_leave(void);

#endif
