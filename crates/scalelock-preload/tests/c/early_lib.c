/* A library whose constructor locks before the preload library's own constructor has run (it is
 * listed after it in LD_PRELOAD, and the dynamic linker initialises later entries first). */
#include "check.h"

int early_ok;

__attribute__((constructor)) static void early(void) {
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    static pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_t robust;
    pthread_mutexattr_t a;
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    CHECK_EQ(pthread_mutex_lock(&r), 0);
    CHECK_EQ(pthread_mutex_lock(&r), 0);
    struct timespec ts = deadline_ms(CLOCK_REALTIME, 2);
    CHECK_EQ(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
    CHECK_EQ(pthread_mutex_unlock(&r), 0);
    CHECK_EQ(pthread_mutex_unlock(&r), 0);
    CHECK_EQ(pthread_mutex_unlock(&m), 0);
    /* A robust mutex needs glibc's functions, resolved on demand. */
    CHECK_EQ(pthread_mutexattr_init(&a), 0);
    CHECK_EQ(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
    CHECK_EQ(pthread_mutex_init(&robust, &a), 0);
    CHECK_EQ(pthread_mutex_lock(&robust), 0);
    CHECK_EQ(pthread_mutex_unlock(&robust), 0);
    CHECK_EQ(pthread_mutex_destroy(&robust), 0);
    early_ok = 1;
}
