/* Condition variables: producer/consumer on both clocks, timeouts, destroy after broadcast. */
#include "check.h"

#define QSIZE 8
#define PRODUCERS 4
#define CONSUMERS 4
#define ITEMS_PER_PRODUCER 20000

struct queue {
    pthread_mutex_t m;
    pthread_cond_t not_empty, not_full;
    long items[QSIZE];
    int head, len, producers_left;
    long consumed, sum;
    int use_broadcast, timed;
    clockid_t clock;
};

static int wait_on(struct queue *q, pthread_cond_t *c) {
    if (!q->timed) return pthread_cond_wait(c, &q->m);
    /* Long enough never to expire: exercises the timed path with real wake-ups. */
    struct timespec ts = deadline_ms(q->clock, 10000);
    int r = pthread_cond_timedwait(c, &q->m, &ts);
    CHECK(r == 0);
    return r;
}

static void wake(struct queue *q, pthread_cond_t *c) {
    CHECK_EQ(q->use_broadcast ? pthread_cond_broadcast(c) : pthread_cond_signal(c), 0);
}

static void *producer(void *arg) {
    struct queue *q = arg;
    for (long i = 1; i <= ITEMS_PER_PRODUCER; i++) {
        CHECK_EQ(pthread_mutex_lock(&q->m), 0);
        while (q->len == QSIZE) CHECK_EQ(wait_on(q, &q->not_full), 0);
        q->items[(q->head + q->len) % QSIZE] = i;
        q->len++;
        wake(q, &q->not_empty);
        CHECK_EQ(pthread_mutex_unlock(&q->m), 0);
    }
    CHECK_EQ(pthread_mutex_lock(&q->m), 0);
    q->producers_left--;
    CHECK_EQ(pthread_cond_broadcast(&q->not_empty), 0);
    CHECK_EQ(pthread_mutex_unlock(&q->m), 0);
    return NULL;
}

static void *consumer(void *arg) {
    struct queue *q = arg;
    for (;;) {
        CHECK_EQ(pthread_mutex_lock(&q->m), 0);
        while (q->len == 0 && q->producers_left > 0) CHECK_EQ(wait_on(q, &q->not_empty), 0);
        if (q->len == 0) {
            CHECK_EQ(pthread_mutex_unlock(&q->m), 0);
            return NULL;
        }
        long v = q->items[q->head];
        q->head = (q->head + 1) % QSIZE;
        q->len--;
        q->consumed++;
        q->sum += v;
        wake(q, &q->not_full);
        CHECK_EQ(pthread_mutex_unlock(&q->m), 0);
    }
}

static void producer_consumer(clockid_t clock, int use_broadcast, int timed, int static_init) {
    static struct queue q;
    memset(&q, 0, sizeof q);
    if (static_init) {
        /* all-zero == PTHREAD_MUTEX_INITIALIZER / PTHREAD_COND_INITIALIZER (CLOCK_REALTIME) */
        pthread_mutex_t mi = PTHREAD_MUTEX_INITIALIZER;
        pthread_cond_t ci = PTHREAD_COND_INITIALIZER;
        q.m = mi;
        q.not_empty = ci;
        q.not_full = ci;
        CHECK(clock == CLOCK_REALTIME);
    } else {
        pthread_condattr_t a;
        CHECK_EQ(pthread_condattr_init(&a), 0);
        CHECK_EQ(pthread_condattr_setclock(&a, clock), 0);
        CHECK_EQ(pthread_mutex_init(&q.m, NULL), 0);
        CHECK_EQ(pthread_cond_init(&q.not_empty, &a), 0);
        CHECK_EQ(pthread_cond_init(&q.not_full, &a), 0);
        CHECK_EQ(pthread_condattr_destroy(&a), 0);
    }
    q.producers_left = PRODUCERS;
    q.use_broadcast = use_broadcast;
    q.timed = timed;
    q.clock = clock;
    pthread_t t[PRODUCERS + CONSUMERS];
    for (int i = 0; i < PRODUCERS; i++) CHECK_EQ(pthread_create(&t[i], NULL, producer, &q), 0);
    for (int i = 0; i < CONSUMERS; i++)
        CHECK_EQ(pthread_create(&t[PRODUCERS + i], NULL, consumer, &q), 0);
    for (int i = 0; i < PRODUCERS + CONSUMERS; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(q.consumed, (long)PRODUCERS * ITEMS_PER_PRODUCER);
    CHECK_EQ(q.sum, (long)PRODUCERS * ITEMS_PER_PRODUCER * (ITEMS_PER_PRODUCER + 1) / 2);
    CHECK_EQ(pthread_cond_destroy(&q.not_empty), 0);
    CHECK_EQ(pthread_cond_destroy(&q.not_full), 0);
    CHECK_EQ(pthread_mutex_destroy(&q.m), 0);
    char buf[160];
    snprintf(buf, sizeof buf, "producer/consumer: %s clock, %s, %s wait%s",
             clock == CLOCK_MONOTONIC ? "monotonic" : "realtime",
             use_broadcast ? "broadcast" : "signal", timed ? "timed" : "untimed",
             static_init ? ", static initialisers" : "");
    ok(buf);
}

static void timeouts(clockid_t clock) {
    pthread_condattr_t a;
    pthread_cond_t c;
    pthread_mutexattr_t ma;
    pthread_mutex_t m;
    CHECK_EQ(pthread_condattr_init(&a), 0);
    CHECK_EQ(pthread_condattr_setclock(&a, clock), 0);
    CHECK_EQ(pthread_cond_init(&c, &a), 0);
    CHECK_EQ(pthread_mutexattr_init(&ma), 0);
    CHECK_EQ(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK), 0);
    CHECK_EQ(pthread_mutex_init(&m, &ma), 0);

    CHECK_EQ(pthread_cond_wait(&c, &m), EPERM); /* errorcheck mutex not held */
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    struct timespec ts = deadline_ms(clock, 30);
    CHECK_EQ(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
    CHECK(now_ns(clock) >= ts_ns(ts));
    CHECK_EQ(pthread_mutex_lock(&m), EDEADLK); /* re-acquired on timeout */
    struct timespec past = {.tv_sec = 1, .tv_nsec = 0};
    CHECK_EQ(pthread_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    CHECK_EQ(pthread_mutex_lock(&m), EDEADLK);
    struct timespec bad = {.tv_sec = 1, .tv_nsec = 2000000000L};
    CHECK_EQ(pthread_cond_timedwait(&c, &m, &bad), EINVAL);
    CHECK_EQ(pthread_mutex_lock(&m), EDEADLK);
    /* clockwait picks its own clock, whatever the condattr said. */
    clockid_t other = clock == CLOCK_MONOTONIC ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    ts = deadline_ms(other, 20);
    CHECK_EQ(pthread_cond_clockwait(&c, &m, other, &ts), ETIMEDOUT);
    CHECK(now_ns(other) >= ts_ns(ts));
    CHECK_EQ(pthread_cond_clockwait(&c, &m, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
    CHECK_EQ(pthread_mutex_unlock(&m), 0);
    CHECK_EQ(pthread_cond_destroy(&c), 0);
    CHECK_EQ(pthread_mutex_destroy(&m), 0);
    CHECK_EQ(pthread_condattr_destroy(&a), 0);
    CHECK_EQ(pthread_mutexattr_destroy(&ma), 0);
    char buf[128];
    snprintf(buf, sizeof buf, "timeouts on the %s clock; EPERM, EINVAL",
             clock == CLOCK_MONOTONIC ? "monotonic" : "realtime");
    ok(buf);
}

/* A realtime condvar measures its deadline on CLOCK_REALTIME: a deadline 1 s in the realtime
 * past must time out at once even though the monotonic clock is far smaller. */
static void realtime_deadline_is_realtime(void) {
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    struct timespec ts = deadline_ms(CLOCK_REALTIME, -1000);
    long long t0 = now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
    CHECK(now_ns(CLOCK_MONOTONIC) - t0 < 1000000000LL);
    /* and a monotonic deadline a little ahead on a monotonic condvar waits about that long */
    pthread_condattr_t a;
    pthread_cond_t mc;
    CHECK_EQ(pthread_condattr_init(&a), 0);
    CHECK_EQ(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
    CHECK_EQ(pthread_cond_init(&mc, &a), 0);
    ts = deadline_ms(CLOCK_MONOTONIC, 40);
    t0 = now_ns(CLOCK_MONOTONIC);
    CHECK_EQ(pthread_cond_timedwait(&mc, &m, &ts), ETIMEDOUT);
    long long waited = now_ns(CLOCK_MONOTONIC) - t0;
    CHECK(waited >= 35000000LL && waited < 5000000000LL);
    CHECK_EQ(pthread_mutex_unlock(&m), 0);
    ok("condattr clock honoured");
}

/* Destroying (and reusing the memory of) a condvar right after a broadcast, while still holding
 * the mutex, is allowed: no woken waiter may touch it afterwards. */
struct gate {
    pthread_mutex_t m;
    pthread_cond_t *c;
    int open, waiting;
};

static void *gate_waiter(void *arg) {
    struct gate *g = arg;
    CHECK_EQ(pthread_mutex_lock(&g->m), 0);
    g->waiting++;
    pthread_cond_t *c = g->c;
    while (!g->open) CHECK_EQ(pthread_cond_wait(c, &g->m), 0);
    CHECK_EQ(pthread_mutex_unlock(&g->m), 0);
    return NULL;
}

static void destroy_after_broadcast(void) {
    for (int round = 0; round < 50; round++) {
        struct gate g = {.m = PTHREAD_MUTEX_INITIALIZER, .open = 0, .waiting = 0};
        g.c = malloc(sizeof(pthread_cond_t));
        CHECK(g.c != NULL);
        CHECK_EQ(pthread_cond_init(g.c, NULL), 0);
        enum { N = 6 };
        pthread_t t[N];
        for (int i = 0; i < N; i++) CHECK_EQ(pthread_create(&t[i], NULL, gate_waiter, &g), 0);
        for (;;) {
            CHECK_EQ(pthread_mutex_lock(&g.m), 0);
            if (g.waiting == N) break;
            CHECK_EQ(pthread_mutex_unlock(&g.m), 0);
            usleep(100);
        }
        g.open = 1;
        CHECK_EQ(pthread_cond_broadcast(g.c), 0);
        CHECK_EQ(pthread_cond_destroy(g.c), 0);
        memset(g.c, 0x77, sizeof(pthread_cond_t)); /* "reused" */
        CHECK_EQ(pthread_mutex_unlock(&g.m), 0);
        for (int i = 0; i < N; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
        for (size_t i = 0; i < sizeof(pthread_cond_t); i++) CHECK_EQ(((unsigned char *)g.c)[i], 0x77);
        free(g.c);
    }
    ok("destroy right after broadcast, under the mutex");
}

/* A condvar waits with a recursive mutex held once, and with a robust mutex (served by glibc). */
static void *signal_after(void *arg) {
    struct gate *g = arg;
    CHECK_EQ(pthread_mutex_lock(&g->m), 0);
    g->open = 1;
    CHECK_EQ(pthread_cond_signal(g->c), 0);
    CHECK_EQ(pthread_mutex_unlock(&g->m), 0);
    return NULL;
}

static void wait_with_mutex_attr(int type, int robust, const char *name) {
    pthread_mutexattr_t ma;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    struct gate g = {.c = &c, .open = 0};
    CHECK_EQ(pthread_mutexattr_init(&ma), 0);
    CHECK_EQ(pthread_mutexattr_settype(&ma, type), 0);
    if (robust) CHECK_EQ(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST), 0);
    CHECK_EQ(pthread_mutex_init(&g.m, &ma), 0);
    CHECK_EQ(pthread_mutex_lock(&g.m), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, signal_after, &g), 0);
    while (!g.open) CHECK_EQ(pthread_cond_wait(&c, &g.m), 0);
    CHECK_EQ(pthread_mutex_unlock(&g.m), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(pthread_mutex_destroy(&g.m), 0);
    char buf[128];
    snprintf(buf, sizeof buf, "wait with a %s mutex", name);
    ok(buf);
}

int main(void) {
    check_interposition();
    producer_consumer(CLOCK_REALTIME, 0, 0, 1);
    producer_consumer(CLOCK_REALTIME, 1, 1, 1);
    producer_consumer(CLOCK_MONOTONIC, 0, 1, 0);
    producer_consumer(CLOCK_MONOTONIC, 1, 0, 0);
    producer_consumer(CLOCK_REALTIME, 0, 1, 0);
    timeouts(CLOCK_REALTIME);
    timeouts(CLOCK_MONOTONIC);
    realtime_deadline_is_realtime();
    destroy_after_broadcast();
    wait_with_mutex_attr(PTHREAD_MUTEX_RECURSIVE, 0, "recursive");
    wait_with_mutex_attr(PTHREAD_MUTEX_ERRORCHECK, 0, "errorcheck");
    wait_with_mutex_attr(PTHREAD_MUTEX_NORMAL, 1, "robust (glibc's)");
    return 0;
}
