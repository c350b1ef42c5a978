/* Shared helpers for the preload library's C test programs.
 *
 * Every program runs twice: under LD_PRELOAD=libscalelock_preload.so and under plain glibc, and
 * must pass both ways (so the tests check POSIX behaviour, not this library's quirks).
 * SCALELOCK_TEST_EXPECT=scalelock|spin|glibc|none tells which implementation should be serving. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CHECK_EQ(a, b)                                                                     \
    do {                                                                                   \
        long long _a = (long long)(a), _b = (long long)(b);                                \
        if (_a != _b) {                                                                    \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
                    #a, _a, #b, _b);                                                       \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static inline void ok(const char *what) { printf("ok %s\n", what); fflush(stdout); }

static inline const char *expected_impl(void) {
    const char *e = getenv("SCALELOCK_TEST_EXPECT");
    return e ? e : "none";
}

/* Checks that the library is (or is not) serving this process, as SCALELOCK_TEST_EXPECT says:
 * by its exported probe, and by the bytes of a locked mutex (glibc stores the owner's tid at
 * offset 8 of a normal mutex; scalelock leaves it zero). */
static inline void check_interposition(void) {
    const char *expect = expected_impl();
    int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "scalelock_preload_active");
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    int owner_field;
    memcpy(&owner_field, (char *)&m + 8, sizeof owner_field);
    CHECK_EQ(pthread_mutex_unlock(&m), 0);
    if (strcmp(expect, "none") == 0) {
        CHECK(active == NULL);
        CHECK(owner_field != 0);
    } else if (strcmp(expect, "glibc") == 0) {
        CHECK(active != NULL);
        CHECK_EQ(active(), 0);
        CHECK(owner_field != 0);
    } else {
        CHECK(active != NULL);
        CHECK_EQ(active(), strcmp(expect, "spin") == 0 ? 2 : 1);
        CHECK_EQ(owner_field, 0);
    }
    ok("interposition");
}

/* An absolute deadline `ms` from now on `clock`. */
static inline struct timespec deadline_ms(clockid_t clock, long ms) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static inline long long now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline long long ts_ns(struct timespec ts) {
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
