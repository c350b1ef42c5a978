/* Thread cancellation of condvar waiters: pthread_cond_wait, _timedwait and _clockwait are
 * cancellation points (deferred and asynchronous); a cancelled waiter's cleanup handlers run with
 * the mutex held by it; the condvar keeps working for the other waiters, and a wake-up the
 * cancelled waiter may have taken is not lost. A hang fails the program (alarm). */
#include "check.h"
#include <signal.h>

enum { WAIT, TIMEDWAIT, CLOCKWAIT };

struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    int waiting;     /* waiters inside their wait loop (under m) */
    int tokens;      /* wake-ups handed out, each consumed by one waiter (under m) */
    int kind;
    int async;
    int cleanups;    /* cleanup handlers run (under m, by the handler) */
    int held_in_cleanup;
    pthread_t first;  /* cancel_racing_signal's cancelled thread */
    int first_got;    /* it consumed a token (under m) */
};

static void cleanup(void *arg) {
    struct shared *s = arg;
    /* An error-checking mutex unlocks only for its owner: 0 here proves the cancelled waiter
     * holds it. */
    int r = pthread_mutex_unlock(&s->m);
    CHECK_EQ(pthread_mutex_lock(&s->m), 0);
    if (r == 0) s->held_in_cleanup++;
    s->cleanups++;
    s->waiting--;
    CHECK_EQ(pthread_mutex_unlock(&s->m), 0);
}

static int wait_once(struct shared *s) {
    struct timespec far;
    switch (s->kind) {
    case TIMEDWAIT:
        far = deadline_ms(CLOCK_REALTIME, 20000);
        return pthread_cond_timedwait(&s->c, &s->m, &far);
    case CLOCKWAIT:
        far = deadline_ms(CLOCK_MONOTONIC, 20000);
        return pthread_cond_clockwait(&s->c, &s->m, CLOCK_MONOTONIC, &far);
    default:
        return pthread_cond_wait(&s->c, &s->m);
    }
}

/* Waits for one token; returns normally if it got one. */
static void *waiter(void *arg) {
    struct shared *s = arg;
    if (s->async) CHECK_EQ(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL), 0);
    CHECK_EQ(pthread_mutex_lock(&s->m), 0);
    pthread_cleanup_push(cleanup, s);
    s->waiting++;
    while (s->tokens == 0) CHECK_EQ(wait_once(s), 0);
    s->tokens--;
    if (pthread_equal(pthread_self(), s->first)) s->first_got = 1;
    s->waiting--;
    pthread_cleanup_pop(0);
    CHECK_EQ(pthread_mutex_unlock(&s->m), 0);
    if (s->async) CHECK_EQ(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL), 0);
    return NULL;
}

static void init(struct shared *s, int kind, int async) {
    memset(s, 0, sizeof *s);
    pthread_mutexattr_t ma;
    CHECK_EQ(pthread_mutexattr_init(&ma), 0);
    CHECK_EQ(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK), 0);
    CHECK_EQ(pthread_mutex_init(&s->m, &ma), 0);
    pthread_condattr_t ca;
    CHECK_EQ(pthread_condattr_init(&ca), 0);
    if (kind == TIMEDWAIT) CHECK_EQ(pthread_condattr_setclock(&ca, CLOCK_REALTIME), 0);
    CHECK_EQ(pthread_cond_init(&s->c, &ca), 0);
    s->kind = kind;
    s->async = async;
}

/* Until `n` waiters are inside their wait (they released the mutex, so they are asleep or about
 * to be). */
static void until_waiting(struct shared *s, int n) {
    for (;;) {
        CHECK_EQ(pthread_mutex_lock(&s->m), 0);
        int w = s->waiting;
        CHECK_EQ(pthread_mutex_unlock(&s->m), 0);
        if (w >= n) return;
        usleep(1000);
    }
}

/* One waiter among three is cancelled while asleep; the other two then get a token each from
 * two signals (not a broadcast). */
static void cancel_one_of_three(int kind, int async) {
    struct shared s;
    init(&s, kind, async);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) CHECK_EQ(pthread_create(&t[i], NULL, waiter, &s), 0);
    until_waiting(&s, 3);
    usleep(20000); /* let them reach the futex */
    CHECK_EQ(pthread_cancel(t[1]), 0);
    void *res;
    CHECK_EQ(pthread_join(t[1], &res), 0);
    CHECK(res == PTHREAD_CANCELED);
    CHECK_EQ(s.cleanups, 1);
    CHECK_EQ(s.held_in_cleanup, 1);
    CHECK_EQ(pthread_mutex_lock(&s.m), 0);
    s.tokens = 2;
    CHECK_EQ(pthread_cond_signal(&s.c), 0);
    CHECK_EQ(pthread_cond_signal(&s.c), 0);
    CHECK_EQ(pthread_mutex_unlock(&s.m), 0);
    for (int i = 0; i < 3; i += 2) {
        CHECK_EQ(pthread_join(t[i], &res), 0);
        CHECK(res == NULL);
    }
    CHECK_EQ(s.tokens, 0);
    CHECK_EQ(pthread_cond_destroy(&s.c), 0);
    CHECK_EQ(pthread_mutex_destroy(&s.m), 0);
}

/* A cancellation that races a signal: if the cancelled waiter took the wake-up, the other one
 * must still be woken (one more token is handed out only if the first waiter consumed its own). */
static void cancel_racing_signal(int rounds) {
    for (int r = 0; r < rounds; r++) {
        struct shared s;
        init(&s, r % 3, 0); /* asynchronous cancellation is not defined for a racing wake-up */
        pthread_t a, b;
        CHECK_EQ(pthread_mutex_lock(&s.m), 0);
        CHECK_EQ(pthread_create(&a, NULL, waiter, &s), 0);
        s.first = a;
        CHECK_EQ(pthread_mutex_unlock(&s.m), 0);
        CHECK_EQ(pthread_create(&b, NULL, waiter, &s), 0);
        until_waiting(&s, 2);
        CHECK_EQ(pthread_mutex_lock(&s.m), 0);
        s.tokens = 1;
        CHECK_EQ(pthread_cond_signal(&s.c), 0);
        CHECK_EQ(pthread_mutex_unlock(&s.m), 0);
        CHECK_EQ(pthread_cancel(a), 0);
        void *res;
        CHECK_EQ(pthread_join(a, &res), 0);
        if (s.first_got) {
            /* a consumed the token before the cancellation could act (an asynchronous one may
             * still end it after that): b needs another. */
            CHECK_EQ(pthread_mutex_lock(&s.m), 0);
            s.tokens++;
            CHECK_EQ(pthread_cond_signal(&s.c), 0);
            CHECK_EQ(pthread_mutex_unlock(&s.m), 0);
        } else {
            CHECK(res == PTHREAD_CANCELED);
            CHECK_EQ(s.held_in_cleanup, 1);
        }
        CHECK_EQ(pthread_join(b, &res), 0);
        CHECK(res == NULL);
        CHECK_EQ(s.tokens, 0);
        CHECK_EQ(pthread_cond_destroy(&s.c), 0);
        CHECK_EQ(pthread_mutex_destroy(&s.m), 0);
    }
}

/* A cancellation already pending when the wait starts acts at once, mutex held. */
static void *self_cancel(void *arg) {
    struct shared *s = arg;
    CHECK_EQ(pthread_mutex_lock(&s->m), 0);
    pthread_cleanup_push(cleanup, s);
    s->waiting++;
    CHECK_EQ(pthread_cancel(pthread_self()), 0);
    wait_once(s);
    s->tokens = -1; /* not reached */
    pthread_cleanup_pop(0);
    return NULL;
}

/* With cancellation disabled the wait is not interrupted; the cancellation acts later. */
static void *disabled(void *arg) {
    struct shared *s = arg;
    CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL), 0);
    CHECK_EQ(pthread_mutex_lock(&s->m), 0);
    s->waiting++;
    while (s->tokens == 0) CHECK_EQ(wait_once(s), 0);
    s->tokens--;
    s->waiting--;
    CHECK_EQ(pthread_mutex_unlock(&s->m), 0);
    CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL), 0);
    pthread_testcancel();
    return NULL;
}

int main(void) {
    alarm(120);
    check_interposition();
    const char *names[] = {"wait", "timedwait", "clockwait"};
    for (int kind = 0; kind < 3; kind++) {
        for (int async = 0; async < 2; async++) {
            cancel_one_of_three(kind, async);
            char what[80];
            snprintf(what, sizeof what, "cancel %s (%s)", names[kind],
                     async ? "asynchronous" : "deferred");
            ok(what);
        }
    }

    for (int kind = 0; kind < 3; kind++) {
        struct shared s;
        init(&s, kind, 0);
        pthread_t t;
        void *res;
        CHECK_EQ(pthread_create(&t, NULL, self_cancel, &s), 0);
        CHECK_EQ(pthread_join(t, &res), 0);
        CHECK(res == PTHREAD_CANCELED);
        CHECK_EQ(s.held_in_cleanup, 1);
        CHECK_EQ(s.tokens, 0);
    }
    ok("pending cancellation acts when the wait starts");

    {
        struct shared s;
        init(&s, WAIT, 0);
        pthread_t t;
        void *res;
        CHECK_EQ(pthread_create(&t, NULL, disabled, &s), 0);
        until_waiting(&s, 1);
        usleep(20000);
        CHECK_EQ(pthread_cancel(t), 0);
        usleep(50000);
        CHECK_EQ(pthread_mutex_lock(&s.m), 0);
        CHECK_EQ(s.waiting, 1); /* still waiting */
        s.tokens = 1;
        CHECK_EQ(pthread_cond_signal(&s.c), 0);
        CHECK_EQ(pthread_mutex_unlock(&s.m), 0);
        CHECK_EQ(pthread_join(t, &res), 0);
        CHECK(res == PTHREAD_CANCELED);
        CHECK_EQ(s.tokens, 0);
    }
    ok("disabled cancellation leaves the wait alone");

    cancel_racing_signal(300);
    ok("cancellation racing a signal loses no wake-up");
    return 0;
}
