/* fork(): the child uses its locks; process-shared and robust mutexes pass through to glibc. */
#include "check.h"
#include <sys/mman.h>
#include <sys/wait.h>

static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn;

static void *pinger(void *arg) {
    long me = (long)arg;
    for (int i = 0; i < 2000; i++) {
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        while (turn % 2 != me) CHECK_EQ(pthread_cond_wait(&c, &m), 0);
        turn++;
        CHECK_EQ(pthread_cond_broadcast(&c), 0);
        CHECK_EQ(pthread_mutex_unlock(&m), 0);
    }
    return NULL;
}

static void ping_pong(void) {
    pthread_t a, b;
    turn = 0;
    CHECK_EQ(pthread_create(&a, NULL, pinger, (void *)0L), 0);
    CHECK_EQ(pthread_create(&b, NULL, pinger, (void *)1L), 0);
    CHECK_EQ(pthread_join(a, NULL), 0);
    CHECK_EQ(pthread_join(b, NULL), 0);
    CHECK_EQ(turn, 4000);
}

static void wait_ok(pid_t pid) {
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child failed: status %d\n", status);
        exit(1);
    }
}

static void child_uses_its_locks(void) {
    ping_pong(); /* the locks have been used (and contended) before the fork */
    CHECK_EQ(pthread_mutex_lock(&recursive), 0);
    CHECK_EQ(pthread_mutex_lock(&recursive), 0);
    CHECK_EQ(pthread_mutex_lock(&normal), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* The forking thread is the child's only thread and still owns what it held. */
        if (strcmp(expected_impl(), "none") != 0 && strcmp(expected_impl(), "glibc") != 0) {
            /* glibc records the owner's tid, which the child does not share, and refuses
             * (EPERM); scalelock records pthread_self(), which the child's thread keeps. */
            CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
            CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
            CHECK_EQ(pthread_mutex_unlock(&recursive), EPERM);
            CHECK_EQ(pthread_mutex_lock(&recursive), 0);
            CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
        }
        CHECK_EQ(pthread_mutex_unlock(&normal), 0);
        CHECK_EQ(pthread_mutex_trylock(&normal), 0);
        CHECK_EQ(pthread_mutex_unlock(&normal), 0);
        ping_pong();
        struct timespec ts = deadline_ms(CLOCK_REALTIME, 5);
        CHECK_EQ(pthread_mutex_lock(&m), 0);
        CHECK_EQ(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
        CHECK_EQ(pthread_mutex_unlock(&m), 0);
        _exit(0);
    }
    CHECK_EQ(pthread_mutex_unlock(&normal), 0);
    CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
    CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
    wait_ok(pid);
    ping_pong();
    ok("fork: the child unlocks what it held and uses its locks");
}

struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    pthread_mutex_t robust;
    volatile int stage;
};

static void process_shared_pass_through(void) {
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    CHECK_EQ(pthread_mutexattr_init(&ma), 0);
    CHECK_EQ(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
    CHECK_EQ(pthread_mutex_init(&s->m, &ma), 0);
    CHECK_EQ(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST), 0);
    CHECK_EQ(pthread_mutex_init(&s->robust, &ma), 0);
    CHECK_EQ(pthread_condattr_init(&ca), 0);
    CHECK_EQ(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
    CHECK_EQ(pthread_cond_init(&s->c, &ca), 0);
    int kind;
    memcpy(&kind, (char *)&s->m + 16, sizeof kind);
    CHECK(kind & 128); /* glibc's process-shared bit: glibc initialised it */

    CHECK_EQ(pthread_mutex_lock(&s->m), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CHECK_EQ(pthread_mutex_trylock(&s->m), EBUSY);
        struct timespec ts = deadline_ms(CLOCK_REALTIME, 20);
        CHECK_EQ(pthread_mutex_timedlock(&s->m, &ts), ETIMEDOUT);
        s->stage = 1;
        CHECK_EQ(pthread_mutex_lock(&s->m), 0); /* blocks until the parent unlocks */
        CHECK_EQ(s->stage, 2);
        s->stage = 3;
        CHECK_EQ(pthread_cond_signal(&s->c), 0);
        while (s->stage != 4) CHECK_EQ(pthread_cond_wait(&s->c, &s->m), 0);
        CHECK_EQ(pthread_mutex_unlock(&s->m), 0);
        /* Die holding the robust mutex. */
        CHECK_EQ(pthread_mutex_lock(&s->robust), 0);
        _exit(0);
    }
    while (s->stage != 1) usleep(1000);
    usleep(10000);
    s->stage = 2;
    while (s->stage != 3) CHECK_EQ(pthread_cond_wait(&s->c, &s->m), 0);
    s->stage = 4;
    CHECK_EQ(pthread_cond_broadcast(&s->c), 0);
    CHECK_EQ(pthread_mutex_unlock(&s->m), 0);
    wait_ok(pid);
    CHECK_EQ(pthread_mutex_lock(&s->robust), EOWNERDEAD);
    CHECK_EQ(pthread_mutex_consistent(&s->robust), 0);
    CHECK_EQ(pthread_mutex_unlock(&s->robust), 0);
    CHECK_EQ(pthread_mutex_lock(&s->robust), 0);
    CHECK_EQ(pthread_mutex_unlock(&s->robust), 0);
    CHECK_EQ(pthread_mutex_destroy(&s->robust), 0);
    CHECK_EQ(pthread_mutex_destroy(&s->m), 0);
    CHECK_EQ(pthread_cond_destroy(&s->c), 0);
    ok("process-shared mutex and condvar across fork, robust EOWNERDEAD (glibc's)");
}

int main(void) {
    check_interposition();
    child_uses_its_locks();
    process_shared_pass_through();
    return 0;
}
