/* Reader-writer locks: readers in parallel, writer exclusion, error codes, timeouts, kinds. */
#include "check.h"
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

static pthread_rwlock_t s_default = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t s_writer_pref = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

#define READERS 6
static atomic_int inside;

static void *reader_waits_for_all(void *arg) {
    pthread_rwlock_t *l = arg;
    CHECK_EQ(pthread_rwlock_rdlock(l), 0);
    atomic_fetch_add(&inside, 1);
    long long give_up = now_ns(CLOCK_MONOTONIC) + 20000000000LL;
    while (atomic_load(&inside) < READERS) {
        CHECK(now_ns(CLOCK_MONOTONIC) < give_up); /* readers were not let in together */
        usleep(100);
    }
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    return NULL;
}

static void readers_in_parallel(pthread_rwlock_t *l, const char *name) {
    pthread_t t[READERS];
    atomic_store(&inside, 0);
    for (int i = 0; i < READERS; i++) CHECK_EQ(pthread_create(&t[i], NULL, reader_waits_for_all, l), 0);
    for (int i = 0; i < READERS; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    char buf[128];
    snprintf(buf, sizeof buf, "%s: %d readers hold the lock at once", name, READERS);
    ok(buf);
}

#define WRITERS 3
#define HAMMER_READERS 4
#define ITERS 3000
static long a_val, b_val;
static atomic_long reads_done;

static void *writer(void *arg) {
    pthread_rwlock_t *l = arg;
    for (int i = 0; i < ITERS; i++) {
        if (i % 3 == 0) {
            while (pthread_rwlock_trywrlock(l) != 0) sched_yield();
        } else if (i % 3 == 1) {
            struct timespec ts = deadline_ms(CLOCK_REALTIME, 60000);
            CHECK_EQ(pthread_rwlock_timedwrlock(l, &ts), 0);
        } else {
            CHECK_EQ(pthread_rwlock_wrlock(l), 0);
        }
        long a = a_val;
        if ((i & 127) == 0) sched_yield();
        a_val = a + 1;
        b_val = b_val + 1;
        CHECK_EQ(pthread_rwlock_unlock(l), 0);
    }
    return NULL;
}

static void *checker(void *arg) {
    pthread_rwlock_t *l = arg;
    for (int i = 0; i < ITERS; i++) {
        if (i & 1) {
            CHECK_EQ(pthread_rwlock_rdlock(l), 0);
        } else {
            struct timespec ts = deadline_ms(CLOCK_MONOTONIC, 60000);
            CHECK_EQ(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &ts), 0);
        }
        long a = a_val;
        if ((i & 127) == 0) sched_yield();
        CHECK_EQ(b_val, a); /* a writer never runs while we read */
        CHECK_EQ(pthread_rwlock_unlock(l), 0);
        atomic_fetch_add(&reads_done, 1);
    }
    return NULL;
}

static void writers_exclude(pthread_rwlock_t *l, const char *name) {
    pthread_t t[WRITERS + HAMMER_READERS];
    a_val = b_val = 0;
    atomic_store(&reads_done, 0);
    for (int i = 0; i < WRITERS; i++) CHECK_EQ(pthread_create(&t[i], NULL, writer, l), 0);
    for (int i = 0; i < HAMMER_READERS; i++) CHECK_EQ(pthread_create(&t[WRITERS + i], NULL, checker, l), 0);
    for (int i = 0; i < WRITERS + HAMMER_READERS; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(a_val, (long)WRITERS * ITERS);
    CHECK_EQ(b_val, (long)WRITERS * ITERS);
    CHECK_EQ(atomic_load(&reads_done), (long)HAMMER_READERS * ITERS);
    char buf[128];
    snprintf(buf, sizeof buf, "%s: writers exclude readers and each other", name);
    ok(buf);
}

static void *try_read(void *arg) { return (void *)(intptr_t)pthread_rwlock_tryrdlock(arg); }
static void *try_write(void *arg) { return (void *)(intptr_t)pthread_rwlock_trywrlock(arg); }
static void *timed_read(void *arg) {
    struct timespec ts = deadline_ms(CLOCK_REALTIME, 40);
    int r = pthread_rwlock_timedrdlock(arg, &ts);
    if (r == ETIMEDOUT) CHECK(now_ns(CLOCK_REALTIME) >= ts_ns(ts));
    return (void *)(intptr_t)r;
}
static void *timed_write(void *arg) {
    struct timespec ts = deadline_ms(CLOCK_MONOTONIC, 40);
    int r = pthread_rwlock_clockwrlock(arg, CLOCK_MONOTONIC, &ts);
    if (r == ETIMEDOUT) CHECK(now_ns(CLOCK_MONOTONIC) >= ts_ns(ts));
    return (void *)(intptr_t)r;
}
static int in_other_thread(void *(*fn)(void *), pthread_rwlock_t *l) {
    pthread_t t;
    void *r;
    CHECK_EQ(pthread_create(&t, NULL, fn, l), 0);
    CHECK_EQ(pthread_join(t, &r), 0);
    return (int)(intptr_t)r;
}

static void error_codes(pthread_rwlock_t *l, const char *name) {
    CHECK_EQ(pthread_rwlock_wrlock(l), 0);
    CHECK_EQ(pthread_rwlock_wrlock(l), EDEADLK);
    CHECK_EQ(pthread_rwlock_rdlock(l), EDEADLK);
    CHECK_EQ(in_other_thread(try_read, l), EBUSY);
    CHECK_EQ(in_other_thread(try_write, l), EBUSY);
    CHECK_EQ(in_other_thread(timed_read, l), ETIMEDOUT);
    CHECK_EQ(in_other_thread(timed_write, l), ETIMEDOUT);
    struct timespec bad = {.tv_sec = 0, .tv_nsec = 1000000000L};
    CHECK_EQ(in_other_thread(timed_write, l), ETIMEDOUT);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);

    CHECK_EQ(pthread_rwlock_rdlock(l), 0);
    CHECK_EQ(pthread_rwlock_rdlock(l), 0); /* a reader may read again */
    CHECK_EQ(in_other_thread(try_read, l), 0);  /* that thread exits holding a read lock... */
    CHECK_EQ(pthread_rwlock_unlock(l), 0);      /* ...(released here on its behalf below) */
    CHECK_EQ(in_other_thread(try_write, l), EBUSY);
    CHECK_EQ(in_other_thread(timed_write, l), ETIMEDOUT);
    CHECK_EQ(pthread_rwlock_timedwrlock(l, &bad), EINVAL);
    CHECK_EQ(pthread_rwlock_clockwrlock(l, CLOCK_PROCESS_CPUTIME_ID, &bad), EINVAL);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    CHECK_EQ(pthread_rwlock_trywrlock(l), 0);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    char buf[128];
    snprintf(buf, sizeof buf, "%s: EDEADLK, EBUSY, ETIMEDOUT, EINVAL", name);
    ok(buf);
}

/* With the default kind (prefer readers), a thread that reads may read again while a writer
 * waits: no deadlock. */
static pthread_rwlock_t *nested_lock;
static atomic_int writer_started;
static void *blocked_writer(void *arg) {
    (void)arg;
    atomic_store(&writer_started, 1);
    CHECK_EQ(pthread_rwlock_wrlock(nested_lock), 0);
    CHECK_EQ(pthread_rwlock_unlock(nested_lock), 0);
    return NULL;
}

static void nested_read_with_writer_waiting(pthread_rwlock_t *l) {
    nested_lock = l;
    atomic_store(&writer_started, 0);
    CHECK_EQ(pthread_rwlock_rdlock(l), 0);
    pthread_t w;
    CHECK_EQ(pthread_create(&w, NULL, blocked_writer, NULL), 0);
    while (!atomic_load(&writer_started)) usleep(100);
    usleep(20000); /* let the writer go to sleep on the lock */
    struct timespec ts = deadline_ms(CLOCK_REALTIME, 10000);
    CHECK_EQ(pthread_rwlock_timedrdlock(l, &ts), 0);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    CHECK_EQ(pthread_join(w, NULL), 0);
    ok("nested read while a writer waits (prefer-readers kind)");
}

static void process_shared(void) {
    pthread_rwlock_t *l = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(l != MAP_FAILED);
    volatile int *stage = (volatile int *)((char *)l + 1024);
    pthread_rwlockattr_t a;
    CHECK_EQ(pthread_rwlockattr_init(&a), 0);
    CHECK_EQ(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
    CHECK_EQ(pthread_rwlock_init(l, &a), 0);
    CHECK_EQ(pthread_rwlock_wrlock(l), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CHECK_EQ(pthread_rwlock_tryrdlock(l), EBUSY);
        *stage = 1;
        CHECK_EQ(pthread_rwlock_rdlock(l), 0);
        CHECK_EQ(*stage, 2);
        CHECK_EQ(pthread_rwlock_unlock(l), 0);
        _exit(0);
    }
    while (*stage != 1) usleep(1000);
    usleep(10000);
    *stage = 2;
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(pthread_rwlock_destroy(l), 0);
    ok("process-shared rwlock across fork (glibc's)");
}

int main(void) {
    check_interposition();
    readers_in_parallel(&s_default, "static default");
    readers_in_parallel(&s_writer_pref, "static writer-nonrecursive");
    error_codes(&s_default, "static default");
    error_codes(&s_writer_pref, "static writer-nonrecursive");
    writers_exclude(&s_default, "static default");
    writers_exclude(&s_writer_pref, "static writer-nonrecursive");
    pthread_rwlock_t l;
    memset(&l, 0x6b, sizeof l);
    CHECK_EQ(pthread_rwlock_init(&l, NULL), 0);
    readers_in_parallel(&l, "init NULL attr");
    writers_exclude(&l, "init NULL attr");
    nested_read_with_writer_waiting(&l);
    CHECK_EQ(pthread_rwlock_destroy(&l), 0);
    process_shared();
    return 0;
}
