/* Mutex types, static initialisers, error codes, timed locks. */
#include "check.h"

static pthread_mutex_t s_normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t s_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

#define THREADS 8
static int ITERS = 4000; /* SCALELOCK_TEST_ITERS overrides (the spin mode runs fewer) */
static long counter;

struct hammer { pthread_mutex_t *m; int use_trylock; };

static void *hammer(void *arg) {
    struct hammer *h = arg;
    for (int i = 0; i < ITERS; i++) {
        if (h->use_trylock && (i & 1)) {
            while (pthread_mutex_trylock(h->m) != 0)
                ;
        } else {
            CHECK_EQ(pthread_mutex_lock(h->m), 0);
        }
        long v = counter;
        if ((i & 511) == 0)
            sched_yield(); /* get preempted inside the critical section now and then */
        counter = v + 1;
        CHECK_EQ(pthread_mutex_unlock(h->m), 0);
    }
    return NULL;
}

static void mutual_exclusion(pthread_mutex_t *m, const char *name) {
    pthread_t t[THREADS];
    struct hammer h = {m, 1};
    counter = 0;
    for (int i = 0; i < THREADS; i++) CHECK_EQ(pthread_create(&t[i], NULL, hammer, &h), 0);
    for (int i = 0; i < THREADS; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(counter, (long)THREADS * ITERS);
    char buf[128];
    snprintf(buf, sizeof buf, "mutual exclusion: %s", name);
    ok(buf);
}

static void *try_from_other_thread(void *arg) {
    return (void *)(intptr_t)pthread_mutex_trylock(arg);
}

static void *unlock_from_other_thread(void *arg) {
    return (void *)(intptr_t)pthread_mutex_unlock(arg);
}

static void *timedlock_from_other_thread(void *arg) {
    struct timespec ts = deadline_ms(CLOCK_REALTIME, 50);
    long long t0 = now_ns(CLOCK_REALTIME);
    int r = pthread_mutex_timedlock(arg, &ts);
    if (r == ETIMEDOUT)
        CHECK(now_ns(CLOCK_REALTIME) >= ts_ns(ts) && now_ns(CLOCK_REALTIME) - t0 >= 40000000LL);
    return (void *)(intptr_t)r;
}

static void *clocklock_from_other_thread(void *arg) {
    struct timespec ts = deadline_ms(CLOCK_MONOTONIC, 50);
    int r = pthread_mutex_clocklock(arg, CLOCK_MONOTONIC, &ts);
    if (r == ETIMEDOUT)
        CHECK(now_ns(CLOCK_MONOTONIC) >= ts_ns(ts));
    return (void *)(intptr_t)r;
}

static int in_other_thread(void *(*fn)(void *), pthread_mutex_t *m) {
    pthread_t t;
    void *r;
    CHECK_EQ(pthread_create(&t, NULL, fn, m), 0);
    CHECK_EQ(pthread_join(t, &r), 0);
    return (int)(intptr_t)r;
}

static void init_with_type(pthread_mutex_t *m, int type) {
    pthread_mutexattr_t a;
    CHECK_EQ(pthread_mutexattr_init(&a), 0);
    CHECK_EQ(pthread_mutexattr_settype(&a, type), 0);
    memset(m, 0xa5, sizeof *m); /* init must not depend on the memory's old contents */
    CHECK_EQ(pthread_mutex_init(m, &a), 0);
    CHECK_EQ(pthread_mutexattr_destroy(&a), 0);
}

static void static_initialisers_keep_glibc_kind(void) {
    /* glibc's static initialisers put the type at offset 16 (__kind); it keeps that meaning. */
    int kind;
    memcpy(&kind, (char *)&s_recursive + 16, sizeof kind);
    CHECK_EQ(kind, PTHREAD_MUTEX_RECURSIVE);
    memcpy(&kind, (char *)&s_errorcheck + 16, sizeof kind);
    CHECK_EQ(kind, PTHREAD_MUTEX_ERRORCHECK);
    memcpy(&kind, (char *)&s_adaptive + 16, sizeof kind);
    CHECK_EQ(kind, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_t m;
    init_with_type(&m, PTHREAD_MUTEX_RECURSIVE);
    memcpy(&kind, (char *)&m + 16, sizeof kind);
    CHECK_EQ(kind & 3, PTHREAD_MUTEX_RECURSIVE);
    CHECK_EQ(pthread_mutex_destroy(&m), 0);
    ok("__kind keeps glibc's meaning");
}

static void normal_semantics(pthread_mutex_t *m, const char *name) {
    CHECK_EQ(pthread_mutex_trylock(m), 0);
    CHECK_EQ(pthread_mutex_trylock(m), EBUSY);
    CHECK_EQ(in_other_thread(try_from_other_thread, m), EBUSY);
    CHECK_EQ(pthread_mutex_destroy(m), EBUSY);
    CHECK_EQ(in_other_thread(timedlock_from_other_thread, m), ETIMEDOUT);
    CHECK_EQ(in_other_thread(clocklock_from_other_thread, m), ETIMEDOUT);
    struct timespec bad = {.tv_sec = 0, .tv_nsec = 1000000000L};
    CHECK_EQ(pthread_mutex_timedlock(m, &bad), EINVAL);
    struct timespec neg = {.tv_sec = 0, .tv_nsec = -1};
    CHECK_EQ(pthread_mutex_timedlock(m, &neg), EINVAL);
    struct timespec soon = deadline_ms(CLOCK_MONOTONIC, 10);
    CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_PROCESS_CPUTIME_ID, &soon), EINVAL);
    CHECK_EQ(pthread_mutex_unlock(m), 0);
    /* A free mutex is taken even with a deadline in the past. */
    struct timespec past = {.tv_sec = 1, .tv_nsec = 0};
    CHECK_EQ(pthread_mutex_timedlock(m, &past), 0);
    CHECK_EQ(pthread_mutex_unlock(m), 0);
    struct timespec later = deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &later), 0);
    CHECK_EQ(pthread_mutex_unlock(m), 0);
    char buf[128];
    snprintf(buf, sizeof buf, "%s: trylock EBUSY, destroy EBUSY, timedlock ETIMEDOUT/EINVAL", name);
    ok(buf);
}

static void recursive_semantics(pthread_mutex_t *m, const char *name) {
    for (int i = 0; i < 100; i++) CHECK_EQ(pthread_mutex_lock(m), 0);
    CHECK_EQ(pthread_mutex_trylock(m), 0);
    struct timespec ts = deadline_ms(CLOCK_REALTIME, 1);
    CHECK_EQ(pthread_mutex_timedlock(m, &ts), 0);
    CHECK_EQ(in_other_thread(try_from_other_thread, m), EBUSY);
    CHECK_EQ(in_other_thread(unlock_from_other_thread, m), EPERM);
    CHECK_EQ(in_other_thread(timedlock_from_other_thread, m), ETIMEDOUT);
    CHECK_EQ(pthread_mutex_destroy(m), EBUSY);
    for (int i = 0; i < 102; i++) CHECK_EQ(pthread_mutex_unlock(m), 0);
    CHECK_EQ(pthread_mutex_unlock(m), EPERM);
    CHECK_EQ(in_other_thread(try_from_other_thread, m), 0); /* that thread exits holding it... */
    /* ...so this thread cannot unlock it. */
    CHECK_EQ(pthread_mutex_unlock(m), EPERM);
    char buf[128];
    snprintf(buf, sizeof buf, "%s: depth 102, EPERM for non-owners, EBUSY while held", name);
    ok(buf);
}

static void errorcheck_semantics(pthread_mutex_t *m, const char *name) {
    CHECK_EQ(pthread_mutex_unlock(m), EPERM);
    CHECK_EQ(pthread_mutex_lock(m), 0);
    CHECK_EQ(pthread_mutex_lock(m), EDEADLK);
    CHECK_EQ(pthread_mutex_trylock(m), EBUSY);
    struct timespec ts = deadline_ms(CLOCK_REALTIME, 1000);
    CHECK_EQ(pthread_mutex_timedlock(m, &ts), EDEADLK);
    CHECK_EQ(in_other_thread(unlock_from_other_thread, m), EPERM);
    CHECK_EQ(in_other_thread(try_from_other_thread, m), EBUSY);
    CHECK_EQ(in_other_thread(clocklock_from_other_thread, m), ETIMEDOUT);
    CHECK_EQ(pthread_mutex_destroy(m), EBUSY);
    CHECK_EQ(pthread_mutex_unlock(m), 0);
    CHECK_EQ(pthread_mutex_unlock(m), EPERM);
    CHECK_EQ(pthread_mutex_destroy(m), 0);
    char buf[128];
    snprintf(buf, sizeof buf, "%s: EDEADLK on relock, EPERM on foreign unlock", name);
    ok(buf);
}

int main(void) {
    if (getenv("SCALELOCK_TEST_ITERS")) ITERS = atoi(getenv("SCALELOCK_TEST_ITERS"));
    check_interposition();
    static_initialisers_keep_glibc_kind();

    normal_semantics(&s_normal, "static normal");
    normal_semantics(&s_adaptive, "static adaptive");
    recursive_semantics(&s_recursive, "static recursive");
    errorcheck_semantics(&s_errorcheck, "static errorcheck");

    pthread_mutex_t m;
    init_with_type(&m, PTHREAD_MUTEX_NORMAL);
    normal_semantics(&m, "init normal");
    mutual_exclusion(&m, "normal");
    CHECK_EQ(pthread_mutex_destroy(&m), 0);
    memset(&m, 0x5a, sizeof m);
    CHECK_EQ(pthread_mutex_init(&m, NULL), 0);
    normal_semantics(&m, "init NULL attr");
    CHECK_EQ(pthread_mutex_destroy(&m), 0);
    init_with_type(&m, PTHREAD_MUTEX_ADAPTIVE_NP);
    mutual_exclusion(&m, "adaptive");
    CHECK_EQ(pthread_mutex_destroy(&m), 0);
    init_with_type(&m, PTHREAD_MUTEX_RECURSIVE);
    recursive_semantics(&m, "init recursive");
    init_with_type(&m, PTHREAD_MUTEX_RECURSIVE);
    mutual_exclusion(&m, "recursive");
    CHECK_EQ(pthread_mutex_destroy(&m), 0);
    init_with_type(&m, PTHREAD_MUTEX_ERRORCHECK);
    mutual_exclusion(&m, "errorcheck");
    errorcheck_semantics(&m, "init errorcheck");
    mutual_exclusion(&s_normal, "static normal");
    return 0;
}
