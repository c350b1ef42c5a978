/* Contends on a mutex and an rwlock from named functions; with argv[1] == "sigint" it then dies
 * of SIGINT instead of exiting (SIGTERM with "sigterm"). Built with -rdynamic so the report can name the functions. */
#include "check.h"
#include <signal.h>

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t table = PTHREAD_RWLOCK_INITIALIZER;
static long counter;

__attribute__((noinline)) void hot_path_lock(void) {
    CHECK_EQ(pthread_mutex_lock(&hot), 0);
    long v = counter;
    for (volatile int i = 0; i < 200; i++) {}
    counter = v + 1;
    CHECK_EQ(pthread_mutex_unlock(&hot), 0);
}

__attribute__((noinline)) void table_writer(void) {
    CHECK_EQ(pthread_rwlock_wrlock(&table), 0);
    for (volatile int i = 0; i < 200; i++) {}
    CHECK_EQ(pthread_rwlock_unlock(&table), 0);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        hot_path_lock();
        if ((i & 7) == 0) table_writer();
    }
    return NULL;
}

static void *one_call(void *arg) {
    (void)arg;
    hot_path_lock();
    return NULL;
}

int main(int argc, char **argv) {
    check_interposition();
    /* One certain contended wait from hot_path_lock: it blocks while main holds the mutex. */
    pthread_t blocked;
    CHECK_EQ(pthread_mutex_lock(&hot), 0);
    CHECK_EQ(pthread_create(&blocked, NULL, one_call, NULL), 0);
    usleep(50000);
    CHECK_EQ(pthread_mutex_unlock(&hot), 0);
    CHECK_EQ(pthread_join(blocked, NULL), 0);
    counter = 0;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(counter, 80000);
    printf("mutex at %p, rwlock at %p\n", (void *)&hot, (void *)&table);
    ok("contended");
    if (argc > 1 && strcmp(argv[1], "sigint") == 0) raise(SIGINT);
    if (argc > 1 && strcmp(argv[1], "sigterm") == 0) raise(SIGTERM);
    return 0;
}
