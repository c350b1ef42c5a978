/* No lock path allocates: this program's own malloc family aborts when called while a thread is
 * inside a pthread lock call (contended ones included). The program's definitions take precedence
 * over libc's, for the preload library's calls too. */
#include "check.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread volatile int in_lock_call;

static void forbid(const char *what) {
    if (in_lock_call) {
        static const char msg[] = "allocation inside a pthread lock call: ";
        write(2, msg, sizeof msg - 1);
        write(2, what, strlen(what));
        write(2, "\n", 1);
        abort();
    }
}

void *malloc(size_t n) { forbid("malloc"); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { forbid("calloc"); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { forbid("realloc"); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { forbid("memalign"); return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n) { forbid("posix_memalign"); *p = __libc_memalign(a, n); return *p ? 0 : ENOMEM; }
void *aligned_alloc(size_t a, size_t n) { forbid("aligned_alloc"); return __libc_memalign(a, n); }
void free(void *p) { forbid("free"); __libc_free(p); }

#define GUARD(call) (in_lock_call = 1, _r = (call), in_lock_call = 0, _r)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rm = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t sp;
static long counter, turns;

static void *worker(void *arg) {
    long me = (long)arg;
    int _r;
    for (int i = 0; i < 3000; i++) {
        CHECK_EQ(GUARD(pthread_mutex_lock(&m)), 0);
        while (turns % 4 != me && i % 50 == 0) {
            struct timespec ts = deadline_ms(CLOCK_REALTIME, 1);
            _r = GUARD(pthread_cond_timedwait(&c, &m, &ts));
            CHECK(_r == 0 || _r == ETIMEDOUT);
            break;
        }
        turns++;
        CHECK_EQ(GUARD(pthread_cond_broadcast(&c)), 0);
        CHECK_EQ(GUARD(pthread_mutex_unlock(&m)), 0);
        CHECK_EQ(GUARD(pthread_mutex_lock(&rm)), 0);
        CHECK_EQ(GUARD(pthread_mutex_lock(&rm)), 0);
        counter++;
        CHECK_EQ(GUARD(pthread_mutex_unlock(&rm)), 0);
        CHECK_EQ(GUARD(pthread_mutex_unlock(&rm)), 0);
        CHECK_EQ(GUARD((i & 3) ? pthread_rwlock_rdlock(&rw) : pthread_rwlock_wrlock(&rw)), 0);
        CHECK_EQ(GUARD(pthread_rwlock_unlock(&rw)), 0);
        struct timespec ts = deadline_ms(CLOCK_MONOTONIC, 1000);
        CHECK_EQ(GUARD(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &ts)), 0);
        CHECK_EQ(GUARD(pthread_rwlock_unlock(&rw)), 0);
        CHECK_EQ(GUARD(pthread_spin_lock(&sp)), 0);
        CHECK_EQ(GUARD(pthread_spin_unlock(&sp)), 0);
        ts = deadline_ms(CLOCK_REALTIME, 1000);
        CHECK_EQ(GUARD(pthread_mutex_timedlock(&m, &ts)), 0);
        CHECK_EQ(GUARD(pthread_mutex_unlock(&m)), 0);
    }
    return NULL;
}

int main(void) {
    if (getenv("NOALLOC_SELFTEST")) {
        /* Proves the guard works: this must abort. */
        in_lock_call = 1;
        void *volatile p = malloc(16);
        in_lock_call = 0;
        free(p);
        return 0;
    }
    check_interposition();
    CHECK_EQ(pthread_spin_init(&sp, 0), 0);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(counter, 4 * 3000);
    ok("no allocation inside any lock call, contended or not");
    return 0;
}
