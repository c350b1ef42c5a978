/* malloc family under SCALELOCK_MALLOC=pool: sizes across the pool's range and beyond, calloc,
 * realloc across classes and owners, the aligned allocators, malloc_usable_size, and threads
 * freeing each other's blocks. Passes under plain glibc too (it checks the C contract).
 * SCALELOCK_TEST_MALLOC=pool|glibc|none: what should serve large allocations. */
#include "check.h"
#include <malloc.h>

static int (*owns)(const void *);
static int expect_pool;

static void setup(void) {
    const char *e = getenv("SCALELOCK_TEST_MALLOC");
    e = e ? e : "none";
    owns = (int (*)(const void *))dlsym(RTLD_DEFAULT, "scalelock_malloc_owns");
    expect_pool = strcmp(e, "pool") == 0;
    if (strcmp(e, "none") == 0) {
        CHECK(owns == NULL);
    } else {
        CHECK(owns != NULL);
    }
}

static int in_pool_range(size_t n) { return n >= 4096 && n <= (4u << 20); }

static void check_owner(void *p, size_t n) {
    if (owns) CHECK_EQ(owns(p), expect_pool && in_pool_range(n));
}

static unsigned char pat(size_t seed, size_t i) { return (unsigned char)(seed * 131 + (i >> 12) * 7 + i); }

static void fill(unsigned char *p, size_t n, size_t seed) {
    for (size_t i = 0; i < n; i += (i < 64 || n - i < 64) ? 1 : 509) p[i] = pat(seed, i);
}

static void verify(const unsigned char *p, size_t n, size_t seed) {
    for (size_t i = 0; i < n; i += (i < 64 || n - i < 64) ? 1 : 509) CHECK_EQ(p[i], pat(seed, i));
}

static void sizes(void) {
    size_t ns[] = {1, 100, 4095, 4096, 5000, 65536, 1 << 20, 4 << 20, (4 << 20) + 1, 10 << 20};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        size_t n = ns[k];
        unsigned char *p = malloc(n);
        CHECK(p != NULL);
        CHECK_EQ((uintptr_t)p % 16, 0);
        CHECK(malloc_usable_size(p) >= n);
        check_owner(p, n);
        fill(p, n, k);
        verify(p, n, k);
        free(p);
    }
    free(NULL);
    ok("sizes");
}

static void calloc_zero(void) {
    for (int round = 0; round < 50; round++) {
        size_t n = 256 << 10;
        unsigned char *d = malloc(n);
        CHECK(d != NULL);
        memset(d, 0xAB, n);
        free(d);
        unsigned char *z = calloc(1, n);
        CHECK(z != NULL);
        check_owner(z, n);
        for (size_t i = 0; i < n; i += 61) CHECK_EQ(z[i], 0);
        CHECK_EQ(z[n - 1], 0);
        memset(z, 0xCD, n);
        free(z);
    }
    errno = 0;
    volatile size_t huge = (size_t)1 << 40; /* volatile: the overflow is checked at run time */
    CHECK(calloc(huge, huge) == NULL);
    CHECK_EQ(errno, ENOMEM);
    ok("calloc");
}

static void fill_all(unsigned char *p, size_t n, size_t seed) {
    for (size_t i = 0; i < n; i++) p[i] = pat(seed, i);
}

static void reallocs(void) {
    size_t steps[] = {100, 5000, 5100, 40000, 300000, 2000, 3 << 20, 6 << 20, 8192, 4096, 50};
    unsigned char *p = realloc(NULL, 10);
    CHECK(p != NULL);
    fill_all(p, 10, 1);
    size_t cur = 10;
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        size_t n = steps[k];
        unsigned char *q = realloc(p, n);
        CHECK(q != NULL);
        size_t keep = cur < n ? cur : n;
        for (size_t i = 0; i < keep; i++) CHECK_EQ(q[i], pat(k + 1, i));
        check_owner(q, n);
        fill_all(q, n, k + 2);
        p = q;
        cur = n;
    }
    free(p);
    /* In place within a class when pooled. */
    p = malloc(40 << 10);
    unsigned char *q = realloc(p, 38 << 10);
    if (expect_pool) CHECK(q == p);
    free(q);
    ok("realloc");
}

static void aligned(void) {
    size_t aligns[] = {16, 64, 4096, 8192, 65536};
    size_t ns[] = {100, 10000, 100000, 2 << 20};
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            void *p = NULL;
            CHECK_EQ(posix_memalign(&p, aligns[a], ns[k]), 0);
            CHECK_EQ((uintptr_t)p % aligns[a], 0);
            CHECK(malloc_usable_size(p) >= ns[k]);
            if (owns) CHECK_EQ(owns(p), expect_pool && in_pool_range(ns[k]) && aligns[a] <= 4096);
            fill(p, ns[k], a);
            void *q = aligned_alloc(aligns[a], ns[k]);
            CHECK(q != NULL);
            CHECK_EQ((uintptr_t)q % aligns[a], 0);
            void *r = memalign(aligns[a], ns[k]);
            CHECK(r != NULL);
            CHECK_EQ((uintptr_t)r % aligns[a], 0);
            verify(p, ns[k], a);
            free(p);
            free(q);
            free(r);
        }
    }
    void *p = NULL;
    CHECK_EQ(posix_memalign(&p, 3, 100), EINVAL);
    CHECK_EQ(posix_memalign(&p, 12, 100), EINVAL);
    ok("aligned");
}

/* Threads passing blocks to each other through a locked queue. */
#define THREADS 8
#define QUEUE 64
static struct { void *p; size_t n, seed; } queue[QUEUE];
static int qlen;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    size_t id = (size_t)arg, x = id * 2654435761u + 1;
    void *live[16] = {0};
    size_t livn[16] = {0}, lives[16] = {0};
    int iters = getenv("SCALELOCK_TEST_ITERS") ? atoi(getenv("SCALELOCK_TEST_ITERS")) : 3000;
    for (int i = 0; i < iters; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int slot = x % 16;
        if (live[slot]) {
            verify(live[slot], livn[slot], lives[slot]);
            int handed = 0;
            if (x % 4 == 0) {
                pthread_mutex_lock(&qlock);
                if (qlen < QUEUE) {
                    queue[qlen].p = live[slot];
                    queue[qlen].n = livn[slot];
                    queue[qlen].seed = lives[slot];
                    qlen++;
                    handed = 1;
                }
                pthread_mutex_unlock(&qlock);
            }
            if (!handed) free(live[slot]);
            live[slot] = NULL;
        }
        size_t n = (x >> 20) % 8 == 0 ? 1 + (x >> 8) % 4000 : 4096 + (x >> 8) % (2 << 20);
        unsigned char *p = (x >> 24) % 3 == 0 ? calloc(1, n) : malloc(n);
        CHECK(p != NULL);
        fill(p, n, id * 100000 + i);
        live[slot] = p;
        livn[slot] = n;
        lives[slot] = id * 100000 + i;
        pthread_mutex_lock(&qlock);
        if (qlen > 0) {
            qlen--;
            void *q = queue[qlen].p;
            size_t qn = queue[qlen].n, qs = queue[qlen].seed;
            pthread_mutex_unlock(&qlock);
            verify(q, qn, qs);
            free(q);
        } else {
            pthread_mutex_unlock(&qlock);
        }
    }
    for (int s = 0; s < 16; s++) free(live[s]);
    return NULL;
}

static void threads(void) {
    pthread_t t[THREADS];
    for (size_t i = 0; i < THREADS; i++) CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < THREADS; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    while (qlen > 0) {
        qlen--;
        verify(queue[qlen].p, queue[qlen].n, queue[qlen].seed);
        free(queue[qlen].p);
    }
    ok("threads");
}

int main(void) {
    setup();
    sizes();
    calloc_zero();
    reallocs();
    aligned();
    threads();
    ok("malloc");
    return 0;
}
