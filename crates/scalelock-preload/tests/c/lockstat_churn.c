/* Creates, uses and destroys more mutexes and rwlocks than lockstat's table holds (each at an
 * address of its own), from named functions, as a server that keeps creating locks does; one
 * more mutex is waited on from `blocked_locker` before main destroys it. Built with -rdynamic
 * so the report can name the functions. */
#include "check.h"

#define MUTEXES 40000
#define RWLOCKS 1000

__attribute__((noinline)) void churn_mutex(pthread_mutex_t *m) {
    CHECK_EQ(pthread_mutex_init(m, NULL), 0);
    CHECK_EQ(pthread_mutex_lock(m), 0);
    CHECK_EQ(pthread_mutex_unlock(m), 0);
    CHECK_EQ(pthread_mutex_destroy(m), 0);
}

__attribute__((noinline)) void churn_rwlock(pthread_rwlock_t *l) {
    CHECK_EQ(pthread_rwlock_init(l, NULL), 0);
    CHECK_EQ(pthread_rwlock_wrlock(l), 0);
    CHECK_EQ(pthread_rwlock_unlock(l), 0);
    CHECK_EQ(pthread_rwlock_destroy(l), 0);
}

/* A program that frees a mutex without destroying it and initialises a new one in its memory
 * (here: the same heap block): the new one starts from nothing (it is acquired once here; the
 * old one twice). */
static pthread_mutex_t *reused;

__attribute__((noinline)) void first_life(void) {
    CHECK_EQ(pthread_mutex_init(reused, NULL), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(pthread_mutex_lock(reused), 0);
        CHECK_EQ(pthread_mutex_unlock(reused), 0);
    }
}

__attribute__((noinline)) void second_life(void) {
    CHECK_EQ(pthread_mutex_init(reused, NULL), 0);
    CHECK_EQ(pthread_mutex_lock(reused), 0);
    CHECK_EQ(pthread_mutex_unlock(reused), 0);
}

/* A global lock the program destroys as it ends: it keeps its row (its address is no other
 * lock's, and a profile names it by its symbol). */
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void use_global(void) {
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(pthread_mutex_lock(&global_lock), 0);
        CHECK_EQ(pthread_mutex_unlock(&global_lock), 0);
    }
}

static pthread_mutex_t *waited;

__attribute__((noinline)) void blocked_locker(void) {
    CHECK_EQ(pthread_mutex_lock(waited), 0);
    CHECK_EQ(pthread_mutex_unlock(waited), 0);
}

static void *blocked(void *arg) {
    (void)arg;
    blocked_locker();
    return NULL;
}

int main(void) {
    check_interposition();
    pthread_mutex_t *ms = calloc(MUTEXES, sizeof *ms);
    pthread_rwlock_t *ls = calloc(RWLOCKS, sizeof *ls);
    CHECK(ms != NULL && ls != NULL);
    for (int i = 0; i < MUTEXES; i++) churn_mutex(&ms[i]);
    for (int i = 0; i < RWLOCKS; i++) churn_rwlock(&ls[i]);
    reused = malloc(sizeof *reused);
    CHECK(reused != NULL);
    first_life();
    second_life();
    printf("reused at %p\n", (void *)reused);
    use_global();
    CHECK_EQ(pthread_mutex_destroy(&global_lock), 0);
    printf("global at %p\n", (void *)&global_lock);

    /* One certain contended wait, from blocked_locker, on a mutex main takes first. */
    waited = malloc(sizeof *waited);
    CHECK(waited != NULL);
    CHECK_EQ(pthread_mutex_init(waited, NULL), 0);
    CHECK_EQ(pthread_mutex_lock(waited), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, blocked, NULL), 0);
    usleep(50000);
    CHECK_EQ(pthread_mutex_unlock(waited), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(pthread_mutex_destroy(waited), 0);
    free(waited);
    free(reused); /* not destroyed: its second life keeps its row */
    free(ms);
    free(ls);
    ok("churn");
    return 0;
}
