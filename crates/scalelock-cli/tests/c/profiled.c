/* A program for `scalelock profile`: contends on a static mutex (table_lock) from a named
 * function, on a static rwlock (index_lock) and on a heap mutex. Built -O2 -g as a PIE without
 * -rdynamic, as distributions build servers. argv[1]: "exit" (return from main), "sigint"
 * (raise SIGINT at the end), "wait" (print "ready" and sleep until a signal ends it). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t index_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t *heap_lock;
static volatile long table_rows;

__attribute__((noinline)) void update_table(void) {
    pthread_mutex_lock(&table_lock);
    for (volatile int i = 0; i < 300; i++) {}
    table_rows++;
    pthread_mutex_unlock(&table_lock);
}

__attribute__((noinline)) void rebuild_index(void) {
    pthread_rwlock_wrlock(&index_lock);
    for (volatile int i = 0; i < 300; i++) {}
    pthread_rwlock_unlock(&index_lock);
}

__attribute__((noinline)) void touch_heap(void) {
    pthread_mutex_lock(heap_lock);
    for (volatile int i = 0; i < 100; i++) {}
    pthread_mutex_unlock(heap_lock);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        update_table();
        if ((i & 3) == 0) rebuild_index();
        if ((i & 7) == 0) touch_heap();
    }
    return NULL;
}

int main(int argc, char **argv) {
    heap_lock = malloc(sizeof *heap_lock);
    pthread_mutex_init(heap_lock, NULL);
    /* One certain wait in update_table: it blocks while main holds table_lock. */
    pthread_t t[4];
    pthread_mutex_lock(&table_lock);
    pthread_create(&t[0], NULL, worker, NULL);
    usleep(50000);
    pthread_mutex_unlock(&table_lock);
    for (int i = 1; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("rows %ld\n", table_rows);
    fflush(stdout);
    const char *how = argc > 1 ? argv[1] : "exit";
    if (strcmp(how, "sigint") == 0) raise(SIGINT);
    if (strcmp(how, "wait") == 0) {
        printf("ready\n");
        fflush(stdout);
        for (;;) pause();
    }
    return 0;
}
