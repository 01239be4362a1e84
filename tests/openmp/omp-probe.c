/* An OpenMP rank for numaplan's tests (tests/openmp.rs, the QEMU guest): every thread of the
 * parallel region spins until all have started; then the primary thread reads every task of
 * the process from /proc/self/task/<tid>/status (Cpus_allowed_list) and stat (the CPU it last
 * ran on) while the others still spin, and prints one line per task:
 *
 *   omp threads 4
 *   task 1234 cpus 2 on 2
 *
 * With PROBE_HELPER=1 it first starts a child that pins itself to NUMAPLAN_HELPER_CPUS, as a
 * data loader's worker_init_fn would, spins, and prints `helper cpus LIST on N`. With
 * PROBE_READY=FILE it creates FILE once the threads spin and keeps spinning PROBE_SPIN_MS
 * milliseconds (default 0) before it reads, so that `numaplan verify` can look at it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void spin(double seconds) {
  double end = now() + seconds;
  volatile unsigned long x = 0;
  while (now() < end) x++;
}

/* The value of `key` in a status file, into out. */
static void status_field(const char *path, const char *key, char *out, size_t n) {
  FILE *f = fopen(path, "r");
  char line[4096];
  out[0] = 0;
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) == 0) {
      char *v = line + strlen(key);
      while (*v == ' ' || *v == '\t') v++;
      v[strcspn(v, "\n")] = 0;
      snprintf(out, n, "%s", v);
    }
  }
  fclose(f);
}

/* Field 39 of a stat file: the CPU the task last ran on. */
static int last_cpu(const char *path) {
  FILE *f = fopen(path, "r");
  char buf[4096];
  if (!f) return -1;
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = 0;
  char *p = strrchr(buf, ')');
  if (!p) return -1;
  int field = 2, cpu = -1;
  for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
    if (++field == 39) cpu = atoi(tok);
  }
  return cpu;
}

static void report(const char *what, const char *dir) {
  char path[512], cpus[4096];
  snprintf(path, sizeof path, "%s/status", dir);
  status_field(path, "Cpus_allowed_list:", cpus, sizeof cpus);
  snprintf(path, sizeof path, "%s/stat", dir);
  printf("%s cpus %s on %d\n", what, cpus, last_cpu(path));
}

/* Pins the calling process to a cpulist ("3,5-6"). */
static void pin(const char *list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  char *copy = strdup(list);
  for (char *item = strtok(copy, ","); item; item = strtok(NULL, ",")) {
    int a, b;
    if (sscanf(item, "%d-%d", &a, &b) != 2) b = a = atoi(item);
    for (int c = a; c <= b; c++) CPU_SET(c, &set);
  }
  free(copy);
  sched_setaffinity(0, sizeof set, &set);
}

int main(void) {
  const char *helpers = getenv("NUMAPLAN_HELPER_CPUS");
  pid_t helper = -1;
  if (getenv("PROBE_HELPER") && helpers) {
    fflush(stdout);
    helper = fork();
    if (helper == 0) {
      pin(helpers);
      spin(0.2);
      report("helper", "/proc/self");
      fflush(stdout);
      _exit(0);
    }
  }
  const char *ready = getenv("PROBE_READY");
  double hold = getenv("PROBE_SPIN_MS") ? atoi(getenv("PROBE_SPIN_MS")) / 1000.0 : 0;
  atomic_int started = 0, done = 0;
  #pragma omp parallel
  {
    atomic_fetch_add(&started, 1);
    while (atomic_load(&started) < omp_get_num_threads()) {}
    if (omp_get_thread_num() == 0) {
      spin(0.05);
      if (ready) fclose(fopen(ready, "w"));
      spin(hold);
      printf("omp threads %d\n", omp_get_num_threads());
      DIR *d = opendir("/proc/self/task");
      struct dirent *e;
      while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char dir[300], what[64];
        snprintf(dir, sizeof dir, "/proc/self/task/%s", e->d_name);
        snprintf(what, sizeof what, "task %s", e->d_name);
        report(what, dir);
      }
      if (d) closedir(d);
      atomic_store(&done, 1);
    }
    while (!atomic_load(&done)) {}
  }
  if (helper > 0) waitpid(helper, NULL, 0);
  return 0;
}
