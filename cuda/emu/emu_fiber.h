/* The smallest context switch the scheduler needs: a fiber runs a function on
 * its own stack and switches to and from one home context. On x86-64 it saves
 * the callee-saved registers only (a few ns; glibc's
 * swapcontext also makes a system call for the signal mask, which would
 * dominate a launch of a million threads); elsewhere it is ucontext. */
#ifndef SW_EMU_FIBER_H
#define SW_EMU_FIBER_H

#include <stddef.h>

#if defined(__x86_64__)
typedef struct sw_fiber_ctx {
    void *sp;
} sw_fiber_ctx;
#else
#include <ucontext.h>
typedef struct sw_fiber_ctx {
    ucontext_t uc;
} sw_fiber_ctx;
#endif

/* Prepares `ctx` to run entry(arg) on [stack, stack + size) when first
 * switched to. entry must never return: it switches away for good instead. */
void sw_fiber_make(sw_fiber_ctx *ctx, char *stack, size_t size, void (*entry)(void *), void *arg);

/* Saves the running context in `from` and resumes `to`. */
void sw_fiber_swap(sw_fiber_ctx *from, sw_fiber_ctx *to);

#endif
