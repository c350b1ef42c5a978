/* Thread cancellation of a C++ condvar waiter: glibc's forced unwind goes through the library's
 * wait into C++ frames, whose destructors run with the mutex held by the cancelled thread. */
#include "check.h"

static pthread_mutex_t m;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int waiting, destroyed_with_lock;

struct Guard {
    ~Guard() {
        /* An error-checking mutex unlocks only for its owner. */
        if (pthread_mutex_unlock(&m) == 0) destroyed_with_lock = 1;
    }
};

static void *waiter(void *) {
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    Guard g;
    waiting = 1;
    for (;;) pthread_cond_wait(&c, &m);
    return nullptr;
}

int main() {
    alarm(60);
    check_interposition();
    pthread_mutexattr_t a;
    CHECK_EQ(pthread_mutexattr_init(&a), 0);
    CHECK_EQ(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
    CHECK_EQ(pthread_mutex_init(&m, &a), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, nullptr, waiter, nullptr), 0);
    for (;;) {
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        int w = waiting;
        CHECK_EQ(pthread_mutex_unlock(&m), 0);
        if (w) break;
        usleep(1000);
    }
    usleep(20000);
    CHECK_EQ(pthread_cancel(t), 0);
    void *r;
    CHECK_EQ(pthread_join(t, &r), 0);
    CHECK(r == PTHREAD_CANCELED);
    CHECK_EQ(destroyed_with_lock, 1);
    ok("C++ destructors run with the mutex held");
    return 0;
}
