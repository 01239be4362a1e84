/* The referee of tests/hwloc_corpus.rs: what hwloc itself says of an XML export, through its own
 * library (the system's hwloc 2.x for 1.x and 2.x files; an hwloc 3 build for 3.0 files, whose
 * answers tests/data/xml/hwloc3-referee.txt records). It loads the file as numaplan does (the
 * whole machine, disallowed CPUs included) and prints, one fact a line:
 *
 *   pus N / cores N / packages N / numanodes N / cpukinds N / nodeless LIST
 *   node ID CPULIST          each NUMA node that holds CPUs
 *   core CPULIST             each core (hwloc's Core object, or a PU without one)
 *
 * The few choices hwloc leaves open are made as ARCHITECTURE.md says numaplan makes them: a PU's
 * node is, among the NUMA nodes attached nearest above it, the first without a memory-only
 * subtype (lowest id); a PU attached to none takes the first node of its complete nodeset, and a
 * PU whose complete nodeset is empty belongs to no node ("nodeless", left out of every count);
 * CPU kinds count only when there are two or more and none splits a core.
 *
 * Build: cc referee.c $(pkg-config --cflags --libs hwloc) -o referee
 */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int memory_only(hwloc_obj_t node) {
  const char *s = node->subtype;
  return s && (!strcmp(s, "GPUMemory") || !strcmp(s, "HBM") || !strcmp(s, "MCDRAM") ||
               !strcmp(s, "NVM") || !strcmp(s, "SPM") || !strncmp(s, "CXL", 3));
}

/* The NUMA nodes among an object's memory children, looking through memory-side caches. */
static void numa_children(hwloc_obj_t obj, hwloc_obj_t *out, int *n, int max) {
  for (hwloc_obj_t m = obj->memory_first_child; m; m = m->next_sibling) {
    if (m->type == HWLOC_OBJ_NUMANODE) {
      if (*n < max) out[(*n)++] = m;
    } else {
      numa_children(m, out, n, max);
    }
  }
}

/* The PU's node id, or -1 for none. */
static int pu_node(hwloc_obj_t pu) {
  for (hwloc_obj_t a = pu->parent; a; a = a->parent) {
    hwloc_obj_t nodes[256];
    int n = 0;
    numa_children(a, nodes, &n, 256);
    if (!n) continue;
    hwloc_obj_t best = NULL;
    for (int i = 0; i < n; i++) {
      if (!best || memory_only(best) > memory_only(nodes[i]) ||
          (memory_only(best) == memory_only(nodes[i]) && nodes[i]->os_index < best->os_index))
        best = nodes[i];
    }
    return (int)best->os_index;
  }
  return pu->complete_nodeset ? hwloc_bitmap_first(pu->complete_nodeset) : -1;
}

/* An object's OS index, or its logical index where hwloc knows none (ia64 packages). */
static unsigned index_of(hwloc_obj_t o) {
  return o->os_index != HWLOC_UNKNOWN_INDEX ? o->os_index : o->logical_index;
}

static void print_list(const char *head, hwloc_const_bitmap_t set) {
  char *text;
  hwloc_bitmap_list_asprintf(&text, set);
  printf("%s%s\n", head, text);
  free(text);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: referee FILE.xml\n");
    return 2;
  }
  hwloc_topology_t t;
  hwloc_topology_init(&t);
  hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  if (hwloc_topology_set_xml(t, argv[1]) || hwloc_topology_load(t)) {
    fprintf(stderr, "referee: hwloc cannot load %s\n", argv[1]);
    return 1;
  }
  int npu = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  hwloc_bitmap_t kept = hwloc_bitmap_alloc(), nodeless = hwloc_bitmap_alloc();
  hwloc_bitmap_t packages = hwloc_bitmap_alloc(), node_ids = hwloc_bitmap_alloc();
  /* Per node id (up to 4096), its CPUs. */
  hwloc_bitmap_t *node_cpus = calloc(4096, sizeof(*node_cpus));
  for (int i = 0; i < npu; i++) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, i);
    int node = pu_node(pu);
    if (node < 0 || node >= 4096) {
      hwloc_bitmap_set(nodeless, pu->os_index);
      continue;
    }
    hwloc_bitmap_set(kept, pu->os_index);
    hwloc_obj_t p = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
    hwloc_bitmap_set(packages, p ? index_of(p) : 0);
    if (!node_cpus[node]) node_cpus[node] = hwloc_bitmap_alloc();
    hwloc_bitmap_set(node_cpus[node], pu->os_index);
    hwloc_bitmap_set(node_ids, node);
  }
  int nnodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnodes; i++) {
    hwloc_obj_t n = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i);
    hwloc_bitmap_set(node_ids, n->os_index);
    hwloc_obj_t p = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, n);
    if (p) hwloc_bitmap_set(packages, index_of(p));
  }
  /* Cores: each kept PU's Core ancestor, or the PU itself. */
  int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE), cores = 0;
  hwloc_bitmap_t *core_sets = calloc(ncores + npu + 1, sizeof(*core_sets));
  for (int i = 0; i < ncores; i++) {
    hwloc_obj_t c = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, i);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_and(set, c->complete_cpuset, kept);
    if (hwloc_bitmap_iszero(set)) {
      hwloc_bitmap_free(set);
      continue;
    }
    core_sets[cores++] = set;
  }
  for (int i = 0; i < npu; i++) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, i);
    if (!hwloc_bitmap_isset(kept, pu->os_index) ||
        hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu))
      continue;
    core_sets[cores] = hwloc_bitmap_alloc();
    hwloc_bitmap_set(core_sets[cores++], pu->os_index);
  }
  /* CPU kinds over the kept PUs: two or more, none splitting a core. */
  int kinds = 0, nkinds = hwloc_cpukinds_get_nr(t, 0);
  for (int k = 0; k < nkinds; k++) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc(), mine = hwloc_bitmap_alloc();
#if HWLOC_API_VERSION >= 0x00030000
    hwloc_cpukinds_get_info(t, k, set, NULL, NULL, 0);
#else
    hwloc_cpukinds_get_info(t, k, set, NULL, NULL, NULL, 0);
#endif
    hwloc_bitmap_and(mine, set, kept);
    if (!hwloc_bitmap_iszero(mine)) {
      kinds++;
      for (int c = 0; c < cores; c++)
        if (hwloc_bitmap_intersects(core_sets[c], mine) && !hwloc_bitmap_isincluded(core_sets[c], mine))
          kinds = -1000;
    }
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(mine);
  }
  printf("pus %d\n", hwloc_bitmap_weight(kept));
  printf("cores %d\n", cores);
  printf("packages %d\n", hwloc_bitmap_iszero(packages) ? 1 : hwloc_bitmap_weight(packages));
  printf("numanodes %d\n", hwloc_bitmap_weight(node_ids));
  printf("cpukinds %d\n", kinds >= 2 ? kinds : 0);
  print_list("nodeless ", nodeless);
  for (int n = 0; n < 4096; n++)
    if (node_cpus[n]) {
      char head[32];
      snprintf(head, sizeof head, "node %d ", n);
      print_list(head, node_cpus[n]);
    }
  for (int c = 0; c < cores; c++) print_list("core ", core_sets[c]);
  return 0;
}
