/*
 * The cancellation points of scalelock's condvar: pthread_cond_wait, pthread_cond_timedwait and
 * pthread_cond_clockwait (see cond.rs, "Cancellation", for the design).
 *
 * These three functions are written in C because a cancellation unwinds the stack with glibc's
 * forced unwind, and no Rust frame may be on the stack between the interrupted sleep and the
 * caller's own frames: the exported symbols are bare jumps into the functions below (no frame),
 * and every Rust function they call has returned before cancellation is enabled. The cleanup
 * handler is pushed with the public pthread_cleanup_push macro, so it is the same mechanism (and
 * ABI) every C program compiled against glibc uses.
 *
 * Invariant of the cancellable region (between the two pthread_setcanceltype calls): this thread
 * is counted among the condvar's waiters and has released the mutex. The cleanup handler,
 * scalelock_cond_wait_cancelled, restores the rest: it passes on a wake-up this thread may have
 * consumed, leaves the condvar and re-acquires the mutex before the caller's handlers run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Mirrors `cond::Wait` (repr(C)). */
struct scalelock_wait {
    const uint32_t *word;
    uint32_t expected;
    int op;
    struct timespec deadline;
    int timed;
    void *real;
    const void *cond;
    pthread_mutex_t *mutex;
    uint32_t depth;
    uintptr_t caller;
};

/* Rust asserts the same (cond.rs). */
_Static_assert(sizeof(struct scalelock_wait) == 80, "struct scalelock_wait: size");
_Static_assert(offsetof(struct scalelock_wait, deadline) == 16, "deadline");
_Static_assert(offsetof(struct scalelock_wait, depth) == 64, "depth");
_Static_assert(offsetof(struct scalelock_wait, caller) == 72, "caller");

enum { WAIT = 0, TIMEDWAIT = 1, CLOCKWAIT = 2 };
/* scalelock_cond_wait_begin's answers besides a result (>= 0). */
enum { BEGIN_SLEEP = -1, BEGIN_GLIBC = -2 };

int scalelock_cond_wait_begin(pthread_cond_t *c, pthread_mutex_t *m, int kind, clockid_t clockid,
                              const struct timespec *abstime, uintptr_t caller,
                              struct scalelock_wait *w);
int scalelock_cond_wait_end(struct scalelock_wait *w, int err);
void scalelock_cond_wait_cancelled(void *w);

#ifdef SCALELOCK_CALLER_TRAMPOLINES
/* The exported symbol jumped here without a call: the return address is the program's. */
#define CALLER() ((uintptr_t)__builtin_return_address(0))
#else
#define CALLER() ((uintptr_t)0)
#endif

/* One sleep on the condvar's word, with cancellation acted upon (deferred or asynchronous).
 * Returns 0 on a wake-up, else the futex's errno (ETIMEDOUT, EAGAIN, EINTR). */
static int sleep_cancellable(struct scalelock_wait *w)
{
    /* volatile: pthread_cleanup_push sets a jump point, and the compiler cannot tell that a
     * cancellation, which jumps back to it, runs the handler and goes on unwinding without ever
     * reading err; without it, GCC warns that err might be clobbered (-Wclobbered). */
    volatile int err = 0;
    int oldtype;
    pthread_cleanup_push(scalelock_cond_wait_cancelled, w);
    /* Switching to asynchronous acts on a cancellation that is already pending. */
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &oldtype);
    long r = syscall(SYS_futex, w->word, w->op, w->expected, w->timed ? &w->deadline : NULL,
                     NULL, FUTEX_BITSET_MATCH_ANY);
    if (r != 0)
        err = errno;
    pthread_setcanceltype(oldtype, NULL);
    pthread_cleanup_pop(0);
    return err;
}

static int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int kind, clockid_t clockid,
                     const struct timespec *abstime, uintptr_t caller)
{
    struct scalelock_wait w;
    int type, r;
    /* A thread with asynchronous cancellation could otherwise be cancelled inside Rust code: run
     * deferred until the sleep, and restore the caller's type once the mutex is held again. */
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &type);
    r = scalelock_cond_wait_begin(c, m, kind, clockid, abstime, caller, &w);
    if (r == BEGIN_SLEEP) {
        int saved = errno;
        r = scalelock_cond_wait_end(&w, sleep_cancellable(&w));
        errno = saved;
    } else if (r == BEGIN_GLIBC) {
        /* glibc's own condvar: its wait is a cancellation point by itself. */
        switch (kind) {
        case WAIT:
            r = ((int (*)(pthread_cond_t *, pthread_mutex_t *))w.real)(c, m);
            break;
        case TIMEDWAIT:
            r = ((int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))w.real)(
                c, m, abstime);
            break;
        default:
            r = ((int (*)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                          const struct timespec *))w.real)(c, m, clockid, abstime);
            break;
        }
    }
    if (type != PTHREAD_CANCEL_DEFERRED)
        pthread_setcanceltype(type, NULL);
    return r;
}

int scalelock_c_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    return cond_wait(c, m, WAIT, CLOCK_REALTIME, NULL, CALLER());
}

int scalelock_c_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                               const struct timespec *abstime)
{
    return cond_wait(c, m, TIMEDWAIT, CLOCK_REALTIME, abstime, CALLER());
}

int scalelock_c_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clockid,
                               const struct timespec *abstime)
{
    return cond_wait(c, m, CLOCKWAIT, clockid, abstime, CALLER());
}
