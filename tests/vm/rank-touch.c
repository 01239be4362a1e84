/* A rank for the multi-NUMA guest: allocates and touches 32 MiB, then checks that its CPUs are
 * exactly one NUMA node's and that every page of the buffer is on that node (the N<k>= counts
 * of its mapping in /proc/self/numa_maps). Prints one line; exits 0 when both hold. Built
 * static (cc -static) so the guest needs no libraries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void read_line(const char *path, const char *key, char *out, size_t n) {
    char line[4096];
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (!key || !strncmp(line, key, strlen(key))) {
            char *v = line + (key ? strlen(key) : 0);
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = 0;
            snprintf(out, n, "%s", v);
            break;
        }
    }
    fclose(f);
}

int main(void) {
    size_t size = 32u << 20;
    char *buf = malloc(size);
    if (!buf) return 2;
    memset(buf, 1, size);

    char cpus[256], path[128], list[256];
    read_line("/proc/self/status", "Cpus_allowed_list:", cpus, sizeof cpus);
    int node = -1;
    for (int n = 0; n < 64 && node < 0; n++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
        read_line(path, NULL, list, sizeof list);
        if (list[0] && !strcmp(list, cpus)) node = n;
    }

    /* The mapping holding buf: the one with the greatest start address <= buf. */
    char line[8192], best[8192] = "";
    unsigned long best_start = 0;
    FILE *f = fopen("/proc/self/numa_maps", "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long start = strtoul(line, NULL, 16);
        if (start <= (unsigned long)buf && start >= best_start) {
            best_start = start;
            snprintf(best, sizeof best, "%s", line);
        }
    }
    if (f) fclose(f);
    best[strcspn(best, "\n")] = 0;

    unsigned long on_node = 0, elsewhere = 0;
    for (char *tok = strtok(best, " "); tok; tok = strtok(NULL, " ")) {
        int k;
        unsigned long pages;
        if (sscanf(tok, "N%d=%lu", &k, &pages) == 2) {
            if (k == node) on_node += pages; else elsewhere += pages;
        }
    }
    int ok = node >= 0 && on_node >= size / 4096 && elsewhere == 0;
    printf("rank %s: cpus %s = node %d; pages on node %lu, elsewhere %lu: %s\n",
           getenv("LOCAL_RANK") ? getenv("LOCAL_RANK") : "?", cpus, node, on_node, elsewhere,
           ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
