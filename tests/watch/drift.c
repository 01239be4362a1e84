/* A rank whose threads do what NCCL's proxy and an OpenMP runtime do, for `verify --watch`
 * (tests/watch.rs here, tests/vm/watch-guest.sh in the 4-node guest):
 *
 *   - "omp-worker" pins itself to the first CPU of the rank at once (an OpenMP place: inside
 *     the rank, not to be reported);
 *   - "nccl-proxy" re-pins itself to every CPU after DRIFT_LEAVE_MS (default 1000), as NCCL's
 *     proxy thread does, and writes the time it did so (ms since the epoch) to
 *     $DRIFT_DIR/left-$LOCAL_RANK;
 *   - the process touches DRIFT_TOUCH_MB MiB (default 0) first, writes "PID PROXY_TID
 *     OMP_TID" to $DRIFT_DIR/ready-$LOCAL_RANK once both threads run, and exits after
 *     DRIFT_SECONDS (default 5; fractions allowed).
 *
 * Its command line holds `drift`, for `verify --match`. Built static for the guest. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static cpu_set_t rank_cpus;
static volatile pid_t proxy_tid, omp_tid;

static double env_num(const char *name, double fallback) {
    const char *v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

static void sleep_s(double s) {
    struct timespec t = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0) {}
}

static void write_file(const char *what, const char *text) {
    char path[4096], tmp[4200];
    const char *dir = getenv("DRIFT_DIR");
    const char *rank = getenv("LOCAL_RANK");
    snprintf(path, sizeof path, "%s/%s-%s", dir ? dir : ".", what, rank ? rank : "0");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) { perror(tmp); exit(2); }
    fputs(text, f);
    fclose(f);
    rename(tmp, path); /* readers never see half a file */
}

static void *omp_worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "omp-worker");
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &rank_cpus)) { CPU_SET(c, &one); break; }
    sched_setaffinity(0, sizeof one, &one);
    omp_tid = (pid_t)syscall(SYS_gettid);
    for (;;) sleep_s(1);
    return NULL;
}

static void *proxy(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "nccl-proxy");
    proxy_tid = (pid_t)syscall(SYS_gettid);
    sleep_s(env_num("DRIFT_LEAVE_MS", 1000) / 1000.0);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; c++) CPU_SET(c, &all);
    if (sched_setaffinity(0, sizeof all, &all) != 0) perror("sched_setaffinity");
    struct timeval now;
    gettimeofday(&now, NULL);
    char text[64];
    snprintf(text, sizeof text, "%lld\n", (long long)now.tv_sec * 1000 + now.tv_usec / 1000);
    write_file("left", text);
    for (;;) sleep_s(1);
    return NULL;
}

int main(void) {
    size_t touch = (size_t)env_num("DRIFT_TOUCH_MB", 0) << 20;
    char *memory = touch ? malloc(touch) : NULL;
    if (memory) memset(memory, 1, touch);
    sched_getaffinity(0, sizeof rank_cpus, &rank_cpus);
    pthread_t a, b;
    pthread_create(&a, NULL, omp_worker, NULL);
    pthread_create(&b, NULL, proxy, NULL);
    while (!proxy_tid || !omp_tid) sleep_s(0.001);
    char text[64];
    snprintf(text, sizeof text, "%d %d %d\n", (int)getpid(), (int)proxy_tid, (int)omp_tid);
    write_file("ready", text);
    sleep_s(env_num("DRIFT_SECONDS", 5));
    return memory && memory[touch - 1] != 1;
}
