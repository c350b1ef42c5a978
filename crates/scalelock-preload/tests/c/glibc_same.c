/* Return values where POSIX leaves the result open and programs rely on glibc's. Prints one line
 * per case, "<case>: <result>", and checks nothing itself: the test runs it under plain glibc and
 * under the library and compares the two outputs line by line. Every case uses a fresh object
 * (some leave theirs unusable, as they would in glibc). */
#include "check.h"

static const char *name(int r) {
    static char buf[32];
    switch (r) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case EDEADLK: return "EDEADLK";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EAGAIN: return "EAGAIN";
    case ENOTSUP: return "ENOTSUP";
    default: snprintf(buf, sizeof buf, "%d", r); return buf;
    }
}

#define SHOW(what, call)                                                                   \
    do {                                                                                   \
        int _r = (call);                                                                   \
        printf("%s: %s\n", what, name(_r));                                                \
    } while (0)

static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK,
                            PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_DEFAULT};
static const char *type_names[] = {"normal", "errorcheck", "recursive", "default"};

static void mutex_init_type(pthread_mutex_t *m, int type) {
    pthread_mutexattr_t a;
    CHECK_EQ(pthread_mutexattr_init(&a), 0);
    CHECK_EQ(pthread_mutexattr_settype(&a, type), 0);
    CHECK_EQ(pthread_mutex_init(m, &a), 0);
}

static void *lock_mutex(void *m) {
    CHECK_EQ(pthread_mutex_lock(m), 0);
    return NULL;
}
static void *unlock_mutex(void *m) { return (void *)(intptr_t)pthread_mutex_unlock(m); }
static void *rdlock(void *l) {
    CHECK_EQ(pthread_rwlock_rdlock(l), 0);
    return NULL;
}
static void *wrlock(void *l) {
    CHECK_EQ(pthread_rwlock_wrlock(l), 0);
    return NULL;
}
static void *rwunlock(void *l) { return (void *)(intptr_t)pthread_rwlock_unlock(l); }

/* Runs f(arg) on another thread (which exits) and returns its result. */
static int on_thread(void *(*f)(void *), void *arg) {
    pthread_t t;
    void *r;
    CHECK_EQ(pthread_create(&t, NULL, f, arg), 0);
    CHECK_EQ(pthread_join(t, &r), 0);
    return (int)(intptr_t)r;
}

static const struct timespec bad_nsec = {.tv_sec = 0, .tv_nsec = 1000000000L};
static const struct timespec neg_nsec = {.tv_sec = 0, .tv_nsec = -1};
static const struct timespec neg_sec = {.tv_sec = -1, .tv_nsec = 0};
static const struct timespec past = {.tv_sec = 1, .tv_nsec = 0};

static const struct {
    const char *name;
    const struct timespec *ts;
} deadlines[] = {{"nsec=1e9", &bad_nsec}, {"nsec=-1", &neg_nsec}, {"sec=-1", &neg_sec},
                 {"past", &past}};

static const struct {
    const char *name;
    clockid_t id;
} clocks[] = {{"REALTIME", CLOCK_REALTIME},
              {"MONOTONIC", CLOCK_MONOTONIC},
              {"PROCESS_CPUTIME", CLOCK_PROCESS_CPUTIME_ID},
              {"MONOTONIC_RAW", CLOCK_MONOTONIC_RAW},
              {"BOOTTIME", CLOCK_BOOTTIME},
              {"TAI", CLOCK_TAI},
              {"-1", -1}};

static void mutexes(void) {
    char what[160];
    for (int i = 0; i < 4; i++) {
        const char *t = type_names[i];
        pthread_mutex_t m;

        mutex_init_type(&m, types[i]);
        snprintf(what, sizeof what, "mutex %s unlock unlocked", t);
        SHOW(what, pthread_mutex_unlock(&m));

        mutex_init_type(&m, types[i]);
        on_thread(lock_mutex, &m);
        snprintf(what, sizeof what, "mutex %s unlock held by exited thread", t);
        SHOW(what, pthread_mutex_unlock(&m));

        mutex_init_type(&m, types[i]);
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        snprintf(what, sizeof what, "mutex %s unlock by non-owner", t);
        SHOW(what, on_thread(unlock_mutex, &m));

        mutex_init_type(&m, types[i]);
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        snprintf(what, sizeof what, "mutex %s trylock own", t);
        SHOW(what, pthread_mutex_trylock(&m));

        mutex_init_type(&m, types[i]);
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        snprintf(what, sizeof what, "mutex %s destroy held", t);
        SHOW(what, pthread_mutex_destroy(&m));

        mutex_init_type(&m, types[i]);
        snprintf(what, sizeof what, "mutex %s destroy twice", t);
        SHOW(what, pthread_mutex_destroy(&m));
        SHOW(what, pthread_mutex_destroy(&m));

        mutex_init_type(&m, types[i]);
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        snprintf(what, sizeof what, "mutex %s timedlock own past", t);
        SHOW(what, pthread_mutex_timedlock(&m, &past));

        for (size_t d = 0; d < sizeof deadlines / sizeof deadlines[0]; d++) {
            mutex_init_type(&m, types[i]);
            snprintf(what, sizeof what, "mutex %s timedlock free %s", t, deadlines[d].name);
            SHOW(what, pthread_mutex_timedlock(&m, deadlines[d].ts));
            mutex_init_type(&m, types[i]);
            on_thread(lock_mutex, &m);
            snprintf(what, sizeof what, "mutex %s timedlock taken %s", t, deadlines[d].name);
            SHOW(what, pthread_mutex_timedlock(&m, deadlines[d].ts));
        }
        for (size_t c = 0; c < sizeof clocks / sizeof clocks[0]; c++) {
            mutex_init_type(&m, types[i]);
            snprintf(what, sizeof what, "mutex %s clocklock free %s past", t, clocks[c].name);
            SHOW(what, pthread_mutex_clocklock(&m, clocks[c].id, &past));
            mutex_init_type(&m, types[i]);
            on_thread(lock_mutex, &m);
            snprintf(what, sizeof what, "mutex %s clocklock taken %s past", t, clocks[c].name);
            SHOW(what, pthread_mutex_clocklock(&m, clocks[c].id, &past));
        }
    }
}

static void rwlocks(void) {
    char what[160];
    pthread_rwlock_t l;

    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    on_thread(rdlock, &l);
    SHOW("rwlock destroy read-held by exited thread", pthread_rwlock_destroy(&l));

    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    CHECK_EQ(pthread_rwlock_rdlock(&l), 0);
    SHOW("rwlock destroy read-held", pthread_rwlock_destroy(&l));

    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    CHECK_EQ(pthread_rwlock_wrlock(&l), 0);
    SHOW("rwlock destroy write-held", pthread_rwlock_destroy(&l));

    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    SHOW("rwlock destroy twice", pthread_rwlock_destroy(&l));
    SHOW("rwlock destroy twice", pthread_rwlock_destroy(&l));

    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    SHOW("rwlock unlock unlocked", pthread_rwlock_unlock(&l));

    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    CHECK_EQ(pthread_rwlock_wrlock(&l), 0);
    SHOW("rwlock wrlock own write", pthread_rwlock_wrlock(&l));
    SHOW("rwlock rdlock own write", pthread_rwlock_rdlock(&l));
    SHOW("rwlock tryrdlock own write", pthread_rwlock_tryrdlock(&l));
    SHOW("rwlock trywrlock own write", pthread_rwlock_trywrlock(&l));
    SHOW("rwlock timedwrlock own write past", pthread_rwlock_timedwrlock(&l, &past));
    SHOW("rwlock timedrdlock own write past", pthread_rwlock_timedrdlock(&l, &past));
    SHOW("rwlock unlock by non-owner of write", on_thread(rwunlock, &l));

    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    CHECK_EQ(pthread_rwlock_rdlock(&l), 0);
    SHOW("rwlock trywrlock own read", pthread_rwlock_trywrlock(&l));
    SHOW("rwlock timedwrlock own read past", pthread_rwlock_timedwrlock(&l, &past));
    SHOW("rwlock unlock by non-owner of read", on_thread(rwunlock, &l));

    for (size_t d = 0; d < sizeof deadlines / sizeof deadlines[0]; d++) {
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        snprintf(what, sizeof what, "rwlock timedrdlock free %s", deadlines[d].name);
        SHOW(what, pthread_rwlock_timedrdlock(&l, deadlines[d].ts));
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        snprintf(what, sizeof what, "rwlock timedwrlock free %s", deadlines[d].name);
        SHOW(what, pthread_rwlock_timedwrlock(&l, deadlines[d].ts));
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        on_thread(wrlock, &l);
        snprintf(what, sizeof what, "rwlock timedrdlock taken %s", deadlines[d].name);
        SHOW(what, pthread_rwlock_timedrdlock(&l, deadlines[d].ts));
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        on_thread(rdlock, &l);
        snprintf(what, sizeof what, "rwlock timedwrlock taken %s", deadlines[d].name);
        SHOW(what, pthread_rwlock_timedwrlock(&l, deadlines[d].ts));
    }
    for (size_t c = 0; c < sizeof clocks / sizeof clocks[0]; c++) {
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        snprintf(what, sizeof what, "rwlock clockrdlock free %s past", clocks[c].name);
        SHOW(what, pthread_rwlock_clockrdlock(&l, clocks[c].id, &past));
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        snprintf(what, sizeof what, "rwlock clockwrlock free %s past", clocks[c].name);
        SHOW(what, pthread_rwlock_clockwrlock(&l, clocks[c].id, &past));
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        on_thread(wrlock, &l);
        snprintf(what, sizeof what, "rwlock clockrdlock taken %s past", clocks[c].name);
        SHOW(what, pthread_rwlock_clockrdlock(&l, clocks[c].id, &past));
        CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
        on_thread(rdlock, &l);
        snprintf(what, sizeof what, "rwlock clockwrlock taken %s past", clocks[c].name);
        SHOW(what, pthread_rwlock_clockwrlock(&l, clocks[c].id, &past));
    }
}

static void *write_and_unlock(void *l) {
    CHECK_EQ(pthread_rwlock_wrlock(l), 0);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    return NULL;
}

/* A reader arrives while the lock is read-held (by a thread that has exited) and a writer
 * waits: glibc's default kind lets it in, the prefer-writer kind keeps it out. */
static void reader_while_writer_waits(void) {
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {{"prefer-reader", PTHREAD_RWLOCK_PREFER_READER_NP},
                 {"prefer-writer-nonrecursive", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP}};
    for (size_t k = 0; k < 2; k++) {
        pthread_rwlock_t l;
        pthread_rwlockattr_t a;
        CHECK_EQ(pthread_rwlockattr_init(&a), 0);
        CHECK_EQ(pthread_rwlockattr_setkind_np(&a, kinds[k].kind), 0);
        CHECK_EQ(pthread_rwlock_init(&l, &a), 0);
        on_thread(rdlock, &l);
        pthread_t w;
        CHECK_EQ(pthread_create(&w, NULL, write_and_unlock, &l), 0);
        usleep(100000); /* the writer is waiting */
        struct timespec soon = deadline_ms(CLOCK_REALTIME, 100);
        char what[160];
        snprintf(what, sizeof what, "rwlock %s timedrdlock while a writer waits", kinds[k].name);
        int r = pthread_rwlock_timedrdlock(&l, &soon);
        SHOW(what, r);
        snprintf(what, sizeof what, "rwlock %s tryrdlock while a writer waits", kinds[k].name);
        int t = pthread_rwlock_tryrdlock(&l);
        SHOW(what, t);
        if (r == 0) CHECK_EQ(pthread_rwlock_unlock(&l), 0);
        if (t == 0) CHECK_EQ(pthread_rwlock_unlock(&l), 0);
        CHECK_EQ(pthread_rwlock_unlock(&l), 0); /* the exited thread's read lock */
        CHECK_EQ(pthread_join(w, NULL), 0);
    }
}

struct cv {
    pthread_mutex_t m;
    pthread_cond_t c;
    int woken, waiting;
};

static void *cv_waiter(void *arg) {
    struct cv *v = arg;
    CHECK_EQ(pthread_mutex_lock(&v->m), 0);
    v->waiting++;
    while (!v->woken) CHECK_EQ(pthread_cond_wait(&v->c, &v->m), 0);
    CHECK_EQ(pthread_mutex_unlock(&v->m), 0);
    return NULL;
}

static void condvars(void) {
    char what[160];
    pthread_mutex_t m;
    pthread_cond_t c;

    CHECK_EQ(pthread_cond_init(&c, NULL), 0);
    SHOW("cond destroy twice", pthread_cond_destroy(&c));
    SHOW("cond destroy twice", pthread_cond_destroy(&c));

    /* Destroy right after a broadcast, waiters still waking (glibc waits for them). */
    struct cv v;
    CHECK_EQ(pthread_mutex_init(&v.m, NULL), 0);
    CHECK_EQ(pthread_cond_init(&v.c, NULL), 0);
    v.woken = v.waiting = 0;
    pthread_t t[3];
    for (int i = 0; i < 3; i++) CHECK_EQ(pthread_create(&t[i], NULL, cv_waiter, &v), 0);
    for (;;) {
        CHECK_EQ(pthread_mutex_lock(&v.m), 0);
        int n = v.waiting;
        if (n == 3) break;
        CHECK_EQ(pthread_mutex_unlock(&v.m), 0);
        usleep(1000);
    }
    v.woken = 1;
    CHECK_EQ(pthread_cond_broadcast(&v.c), 0);
    CHECK_EQ(pthread_mutex_unlock(&v.m), 0);
    SHOW("cond destroy after broadcast, waiters waking", pthread_cond_destroy(&v.c));
    for (int i = 0; i < 3; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);

    for (int i = 0; i < 4; i++) {
        mutex_init_type(&m, types[i]);
        CHECK_EQ(pthread_cond_init(&c, NULL), 0);
        snprintf(what, sizeof what, "cond timedwait %s mutex not held past", type_names[i]);
        SHOW(what, pthread_cond_timedwait(&c, &m, &past));
    }
    for (size_t d = 0; d < sizeof deadlines / sizeof deadlines[0]; d++) {
        CHECK_EQ(pthread_mutex_init(&m, NULL), 0);
        CHECK_EQ(pthread_cond_init(&c, NULL), 0);
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        snprintf(what, sizeof what, "cond timedwait %s", deadlines[d].name);
        SHOW(what, pthread_cond_timedwait(&c, &m, deadlines[d].ts));
        snprintf(what, sizeof what, "cond timedwait %s: mutex held after", deadlines[d].name);
        SHOW(what, pthread_mutex_trylock(&m));
    }
    for (size_t k = 0; k < sizeof clocks / sizeof clocks[0]; k++) {
        CHECK_EQ(pthread_mutex_init(&m, NULL), 0);
        CHECK_EQ(pthread_cond_init(&c, NULL), 0);
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        snprintf(what, sizeof what, "cond clockwait %s past", clocks[k].name);
        SHOW(what, pthread_cond_clockwait(&c, &m, clocks[k].id, &past));
        snprintf(what, sizeof what, "cond clockwait %s nsec=1e9", clocks[k].name);
        SHOW(what, pthread_cond_clockwait(&c, &m, clocks[k].id, &bad_nsec));
    }
    for (size_t k = 0; k < sizeof clocks / sizeof clocks[0]; k++) {
        pthread_condattr_t a;
        CHECK_EQ(pthread_condattr_init(&a), 0);
        snprintf(what, sizeof what, "condattr setclock %s", clocks[k].name);
        SHOW(what, pthread_condattr_setclock(&a, clocks[k].id));
    }
}

static void spinlocks(void) {
    pthread_spinlock_t s;
    CHECK_EQ(pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE), 0);
    SHOW("spin unlock unlocked", pthread_spin_unlock(&s));
    CHECK_EQ(pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE), 0);
    CHECK_EQ(pthread_spin_lock(&s), 0);
    SHOW("spin trylock own", pthread_spin_trylock(&s));
    SHOW("spin destroy held", pthread_spin_destroy(&s));
}

int main(void) {
    alarm(60);
    mutexes();
    rwlocks();
    reader_while_writer_waits();
    condvars();
    spinlocks();
    fflush(stdout);
    check_interposition();
    return 0;
}
