#include "emu_fiber.h"

#include <stdint.h>

#if defined(__x86_64__)

/* sw_fiber_switch(&save_sp, load_sp): pushes rbp, rbx and r12-r15, stores
 * rsp, loads the other rsp and pops the same. The FP control words are not
 * switched: every fiber runs kernel code on the thread that launched it,
 * which never changes them. A new fiber's stack is laid out as if it had
 * switched away at the start of sw_fiber_start, which calls entry (r13) with
 * arg (r12). */
extern "C" void sw_fiber_switch(void **save_sp, void *load_sp);
extern "C" void sw_fiber_start(void);
asm(".text\n"
    ".globl sw_fiber_switch\n"
    ".hidden sw_fiber_switch\n"
    ".type sw_fiber_switch,@function\n"
    "sw_fiber_switch:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size sw_fiber_switch, .-sw_fiber_switch\n"
    ".globl sw_fiber_start\n"
    ".hidden sw_fiber_start\n"
    ".type sw_fiber_start,@function\n"
    "sw_fiber_start:\n"
    "  andq $-16, %rsp\n"
    "  movq %r12, %rdi\n"
    "  callq *%r13\n"
    "  ud2\n"
    ".size sw_fiber_start, .-sw_fiber_start\n");

void sw_fiber_make(sw_fiber_ctx *ctx, char *stack, size_t size, void (*entry)(void *), void *arg)
{
    uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top - 8;
    sp[0] = 0;                          /* r15 */
    sp[1] = 0;                          /* r14 */
    sp[2] = (uint64_t)(uintptr_t)entry; /* r13 */
    sp[3] = (uint64_t)(uintptr_t)arg;   /* r12 */
    sp[4] = 0;                          /* rbx */
    sp[5] = 0;                          /* rbp */
    sp[6] = (uint64_t)(uintptr_t)&sw_fiber_start;
    sp[7] = 0;
    ctx->sp = sp;
}

void sw_fiber_swap(sw_fiber_ctx *from, sw_fiber_ctx *to)
{
    sw_fiber_switch(&from->sp, to->sp);
}

#else

static void (*pending_entry)(void *);
static void *pending_arg;

static void trampoline(void)
{
    void (*entry)(void *) = pending_entry;
    entry(pending_arg);
}

void sw_fiber_make(sw_fiber_ctx *ctx, char *stack, size_t size, void (*entry)(void *), void *arg)
{
    getcontext(&ctx->uc);
    ctx->uc.uc_stack.ss_sp = stack;
    ctx->uc.uc_stack.ss_size = size;
    ctx->uc.uc_link = NULL;
    /* makecontext passes ints only: the one fiber started next reads these. */
    pending_entry = entry;
    pending_arg = arg;
    makecontext(&ctx->uc, trampoline, 0);
}

void sw_fiber_swap(sw_fiber_ctx *from, sw_fiber_ctx *to)
{
    swapcontext(&from->uc, &to->uc);
}

#endif
