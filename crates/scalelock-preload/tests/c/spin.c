/* pthread_spin_*: exclusion, trylock, process-private and process-shared words. */
#include "check.h"
#include <sys/mman.h>
#include <sys/wait.h>

#define THREADS 6
#define ITERS 20000
static pthread_spinlock_t lock;
static long counter;

static void *hammer(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        if (i & 1) {
            while (pthread_spin_trylock(&lock) != 0)
                ;
        } else {
            CHECK_EQ(pthread_spin_lock(&lock), 0);
        }
        long v = counter;
        if ((i & 1023) == 0)
            sched_yield();
        counter = v + 1;
        CHECK_EQ(pthread_spin_unlock(&lock), 0);
    }
    return NULL;
}

int main(void) {
    check_interposition();
    CHECK_EQ(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
    CHECK_EQ(pthread_spin_trylock(&lock), 0);
    CHECK_EQ(pthread_spin_trylock(&lock), EBUSY);
    CHECK_EQ(pthread_spin_unlock(&lock), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK_EQ(pthread_create(&t[i], NULL, hammer, NULL), 0);
    for (int i = 0; i < THREADS; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(counter, (long)THREADS * ITERS);
    CHECK_EQ(pthread_spin_destroy(&lock), 0);
    ok("spinlock exclusion (threads > cores)");

    /* Process-shared: parent holds it, the child sees it held, then takes it once released. */
    pthread_spinlock_t *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED);
    volatile int *flag = (volatile int *)(shared + 16);
    CHECK_EQ(pthread_spin_init(shared, PTHREAD_PROCESS_SHARED), 0);
    CHECK_EQ(pthread_spin_lock(shared), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (pthread_spin_trylock(shared) != EBUSY) _exit(2);
        *flag = 1;
        if (pthread_spin_lock(shared) != 0) _exit(3);
        if (*flag != 2) _exit(4);
        pthread_spin_unlock(shared);
        _exit(0);
    }
    while (*flag != 1) usleep(1000);
    *flag = 2;
    CHECK_EQ(pthread_spin_unlock(shared), 0);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    ok("process-shared spinlock across fork");
    return 0;
}
