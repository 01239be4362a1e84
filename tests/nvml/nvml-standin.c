/* A stand-in for NVIDIA's NVML (libnvidia-ml.so.1), for tests only: no GPU is here, and no
 * NVIDIA driver. It exports the few entry points numaplan calls through nvml-wrapper
 * (src/topology/nvml.rs `probe` and `driver`) and answers them from a JSON description named
 * by $NVML_STANDIN:
 *
 *   {"init": 0, "driver": "550.54.15",
 *    "gpus": [{"uuid": "GPU-...", "pci": "00000000:07:00.0", "name": "NVIDIA A100-SXM4-80GB",
 *              "cpus": "0-15,64-79", "fail": "uuid=999"}, ...]}
 *
 * "init" is the status nvmlInit_v2 returns (0: success; 9: NVML_ERROR_DRIVER_NOT_LOADED), the
 * GPUs are listed in NVML's index order (the order a container's NVML numbers them), "cpus" is
 * the CPU affinity as a cpulist, and "fail" makes calls of that GPU return an error status:
 * `handle`, `pci`, `affinity`, `uuid` or `name` = an NVML status. The reader understands this
 * shape only (flat GPU objects, string or number values). Built by tests/gpus_handed_out.rs
 * with `cc -shared -fPIC` and loaded through LD_LIBRARY_PATH, as the real library would be.
 * The real-GPU check is in docs/hardware-checks.md. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
};

typedef struct {
    char uuid[96];
    char pci[32];
    char name[96];
    char cpus[512];
    char fail[128];
} gpu_t;

typedef gpu_t *nvmlDevice_t;

/* nvmlPciInfo_t, version 3 (nvml.h). */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

#define MAX_GPUS 64
static gpu_t gpus[MAX_GPUS];
static unsigned int gpu_count;
static char driver[64] = "550.54.15";
static int initialized;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return text;
}

/* The value of "key" between from and to: a string's content or a bare token. */
static int value(const char *from, const char *to, const char *key, char *out, size_t size) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *p = strstr(from, quoted);
    if (!p || p >= to) return 0;
    p += strlen(quoted);
    while (*p == ' ' || *p == ':' || *p == '\n' || *p == '\t') p++;
    size_t n = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"' && n + 1 < size; p++) out[n++] = *p;
    } else {
        for (; *p && strchr("0123456789-abcdefxABCDEFX.", *p) && n + 1 < size; p++) out[n++] = *p;
    }
    out[n] = 0;
    return 1;
}

static nvmlReturn_t load(void) {
    const char *path = getenv("NVML_STANDIN");
    char *text = path ? slurp(path) : NULL;
    if (!text) return NVML_ERROR_LIBRARY_NOT_FOUND;
    char *list = strstr(text, "\"gpus\"");
    const char *top_end = list ? list : text + strlen(text);
    char buf[64];
    int init = 0;
    if (value(text, top_end, "init", buf, sizeof buf)) init = atoi(buf);
    value(text, top_end, "driver", driver, sizeof driver);
    gpu_count = 0;
    const char *p = list ? strchr(list, '[') : NULL;
    while (p && gpu_count < MAX_GPUS) {
        const char *open = strchr(p, '{'), *close_list = strchr(p, ']');
        if (!open || (close_list && close_list < open)) break;
        const char *close = strchr(open, '}');
        if (!close) break;
        gpu_t *g = &gpus[gpu_count++];
        memset(g, 0, sizeof *g);
        value(open, close, "uuid", g->uuid, sizeof g->uuid);
        value(open, close, "pci", g->pci, sizeof g->pci);
        value(open, close, "name", g->name, sizeof g->name);
        value(open, close, "cpus", g->cpus, sizeof g->cpus);
        value(open, close, "fail", g->fail, sizeof g->fail);
        p = close + 1;
    }
    return init;
}

/* The status "fail" asks `call` of this GPU to return, else success. */
static nvmlReturn_t failing(const gpu_t *g, const char *call) {
    size_t n = strlen(call);
    for (const char *p = g->fail; (p = strstr(p, call)); p += n) {
        if ((p == g->fail || p[-1] == ',') && p[n] == '=') return atoi(p + n + 1);
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t copy(const char *from, char *to, unsigned int size) {
    if (strlen(from) + 1 > size) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(to, from);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) {
    nvmlReturn_t r = load();
    initialized = r == NVML_SUCCESS;
    return r;
}

nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown(void) {
    initialized = 0;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r) {
    static char text[64];
    snprintf(text, sizeof text, "stand-in NVML status %d", r);
    return text;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int size) {
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    return copy(driver, version, size);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    *count = gpu_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    if (index >= gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = failing(&gpus[index], "handle");
    if (r == NVML_SUCCESS) *device = &gpus[index];
    return r;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t g, nvmlPciInfo_t *pci) {
    nvmlReturn_t r = failing(g, "pci");
    if (r != NVML_SUCCESS) return r;
    memset(pci, 0, sizeof *pci);
    unsigned int function = 0;
    sscanf(g->pci, "%x:%x:%x.%x", &pci->domain, &pci->bus, &pci->device, &function);
    snprintf(pci->busId, sizeof pci->busId, "%s", g->pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.%x", pci->domain & 0xffff,
             pci->bus, pci->device, function);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t g, unsigned int words, unsigned long *set) {
    nvmlReturn_t r = failing(g, "affinity");
    if (r != NVML_SUCCESS) return r;
    const unsigned int bits = 8 * sizeof(unsigned long);
    memset(set, 0, words * sizeof(unsigned long));
    for (const char *p = g->cpus; *p;) {
        char *end;
        unsigned long first = strtoul(p, &end, 10), last = first;
        if (*end == '-') last = strtoul(end + 1, &end, 10);
        for (unsigned long cpu = first; cpu <= last && cpu < (unsigned long)words * bits; cpu++)
            set[cpu / bits] |= 1UL << (cpu % bits);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t g, char *uuid, unsigned int size) {
    nvmlReturn_t r = failing(g, "uuid");
    return r != NVML_SUCCESS ? r : copy(g->uuid, uuid, size);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t g, char *name, unsigned int size) {
    nvmlReturn_t r = failing(g, "name");
    return r != NVML_SUCCESS ? r : copy(g->name, name, size);
}
