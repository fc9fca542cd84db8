// LMDB's free list after one transaction rewrote every row (a view registered over existing rows), in raw LMDB:
// the layout of an observed two-view update (rows, a 60-byte log entry per commit pruned 64 at a time, an info
// record per view with INFO=1, VIEWS=N tables of 2,000-byte values, two rewritten per table and commit), then
// one-put commits; prints the free list's shape and the pages each commit writes (bytes passed to write calls).
//
//   cc -O2 -o /tmp/free-list-model Benchmarks/free-list-model.c -llmdb
//   INFO=1 VIEWS=2 /tmp/free-list-model ROWS COMMITS MODE
//
// MODE: plain (the rows rewritten, as a registration does), norewrite (not rewritten: the free list stays short),
// merge (after the rewrite, a 3-page value put and deleted: LMDB reads every free-list record looking for three
// contiguous pages, and saves what it did not use as a few large records), ballast (two commits after the rewrite,
// the free pages parked in a table of one-page values). Issue 19, session 12: see the Views article of Canopy.
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#define CHECK(x) do { int rc_ = (x); if (rc_) { fprintf(stderr, "%s: %s\n", #x, mdb_strerror(rc_)); exit(1); } } while (0)
static long wchar(void) { FILE *f = fopen("/proc/self/io", "r"); char line[128]; long v = 0;
  while (fgets(line, sizeof line, f)) { if (!strncmp(line, "wchar:", 6)) v = atol(line + 6); }
  fclose(f); return v; }
static uint64_t mix(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; return x; }
static void put(MDB_txn *t, MDB_dbi d, uint64_t i, size_t vsize, uint64_t seed) {
  unsigned char k[16], v[4096]; uint64_t be = __builtin_bswap64(i); memcpy(k, &be, 8); uint64_t m = mix(i); memcpy(k + 8, &m, 8);
  for (size_t o = 0; o + 8 <= vsize; o += 8) { uint64_t s = mix(seed + o); memcpy(v + o, &s, 8); }
  MDB_val kk = {16, k}, vv = {vsize, v}; CHECK(mdb_put(t, d, &kk, &vv, 0)); }
static long freestat(MDB_env *e, const char *label) { MDB_txn *t; MDB_stat s; CHECK(mdb_txn_begin(e, NULL, MDB_RDONLY, &t));
  CHECK(mdb_stat(t, 0, &s)); MDB_cursor *c; MDB_val k, v; long pages = 0; CHECK(mdb_cursor_open(t, 0, &c));
  while (!mdb_cursor_get(c, &k, &v, MDB_NEXT)) { pages += *(size_t *)v.mv_data; }
  mdb_cursor_close(c);
  printf("%s: free list %zu records, depth %u, %zu leaves, %zu branches, %zu overflow, %ld pages\n", label, s.ms_entries, s.ms_depth, s.ms_leaf_pages, s.ms_branch_pages, s.ms_overflow_pages, pages);
  mdb_txn_abort(t); return pages; }
int main(int argc, char **argv) {
  int rows = argc > 1 ? atoi(argv[1]) : 100000, commits = argc > 2 ? atoi(argv[2]) : 2000; const char *mode = argc > 3 ? argv[3] : "plain";
  char dir[] = "/tmp/s12-pages/fl/envXXXXXX"; mkdtemp(dir);
  MDB_env *e; CHECK(mdb_env_create(&e)); CHECK(mdb_env_set_mapsize(e, 1UL << 31)); CHECK(mdb_env_set_maxdbs(e, 8));
  CHECK(mdb_env_open(e, dir, MDB_NOSYNC, 0644));
  int info_on = getenv("INFO") && atoi(getenv("INFO")); int views = getenv("VIEWS") ? atoi(getenv("VIEWS")) : 0;
  MDB_txn *t; MDB_dbi d, log, info, vp[2];
  CHECK(mdb_txn_begin(e, NULL, 0, &t)); CHECK(mdb_dbi_open(t, "rows", MDB_CREATE, &d)); CHECK(mdb_dbi_open(t, "log", MDB_CREATE, &log)); CHECK(mdb_dbi_open(t, "info", MDB_CREATE, &info));
  CHECK(mdb_dbi_open(t, "v0", MDB_CREATE, &vp[0])); CHECK(mdb_dbi_open(t, "v1", MDB_CREATE, &vp[1]));
  for (int i = 0; i < 12; i++) { char k[32]; snprintf(k, sizeof k, "ext.view-%d.state", i); MDB_val kk = {strlen(k), k}, vv = {20, k}; CHECK(mdb_put(t, info, &kk, &vv, 0)); }
  for (int w = 0; w < 2; w++) for (int i = 0; i < rows / 40; i++) put(t, vp[w], i, 2000, i);
  for (int i = 0; i < rows; i++) put(t, d, i, 100, i);
  CHECK(mdb_txn_commit(t)); freestat(e, "after load");
  // registration: every row rewritten, 20 bytes longer
  if (strcmp(mode, "norewrite")) { CHECK(mdb_txn_begin(e, NULL, 0, &t)); for (int i = 0; i < rows; i++) put(t, d, i, 120, i + 7); CHECK(mdb_txn_commit(t)); }
  freestat(e, "after rewrite");
  if (!strcmp(mode, "merge")) { // an overflow value put and deleted: LMDB loads free-list records looking for a run
    CHECK(mdb_txn_begin(e, NULL, 0, &t)); unsigned char k[8] = "zzzzzzz"; MDB_val kk = {8, k}, vv = {3 * 4096, NULL};
    CHECK(mdb_put(t, log, &kk, &vv, MDB_RESERVE)); memset(vv.mv_data, 0, vv.mv_size); CHECK(mdb_txn_commit(t));
    CHECK(mdb_txn_begin(e, NULL, 0, &t)); CHECK(mdb_del(t, log, &kk, NULL)); CHECK(mdb_txn_commit(t)); freestat(e, "after merge");
  }
  if (!strcmp(mode, "ballast")) { // the free pages parked in a table of one-page values
    CHECK(mdb_txn_begin(e, NULL, 0, &t)); put(t, d, 1, 120, 1); CHECK(mdb_txn_commit(t));
    MDB_dbi spare; CHECK(mdb_txn_begin(e, NULL, 0, &t)); CHECK(mdb_dbi_open(t, "spare", MDB_CREATE, &spare));
    long free = freestat(e, "before parking");
    for (uint64_t n = 0; n < 10000; n++) { uint64_t be = __builtin_bswap64(n); MDB_val kk = {8, &be}, vv = {4000, NULL};
      CHECK(mdb_put(t, spare, &kk, &vv, MDB_RESERVE)); memset(vv.mv_data, 0, vv.mv_size);
      if ((long)n + 24 >= free) break; }  // a few left for the free list's own pages
    CHECK(mdb_txn_commit(t)); freestat(e, "after parking"); }
  int runs[64][2], nr = 0; long total = 0; uint64_t snap = 0;
  for (int c = 0; c < commits; c++) {
    long before = wchar(); CHECK(mdb_txn_begin(e, NULL, 0, &t)); put(t, d, mix(c + 99) % rows, 120, c);
    for (int w = 0; w < views; w++) { put(t, vp[w], mix(c + 5 + w) % (rows / 40), 2000, c); put(t, vp[w], mix(c + 77 + w) % (rows / 40), 2000, c); }
    if (info_on) for (int w = 0; w < 2; w++) { char k[32]; snprintf(k, sizeof k, "ext.view-%d.state", w); MDB_val kk = {strlen(k), k}, vv = {20, k}; CHECK(mdb_put(t, info, &kk, &vv, 0)); }
    unsigned char k[8]; uint64_t be = __builtin_bswap64(++snap); memcpy(k, &be, 8); unsigned char v[60] = {0};
    MDB_val kk = {8, k}, vv = {60, v}; CHECK(mdb_put(t, log, &kk, &vv, MDB_APPEND));
    if (snap > 1024 && snap % 64 == 0) { MDB_cursor *cu; CHECK(mdb_cursor_open(t, log, &cu)); for (int j = 0; j < 64; j++) { MDB_val a, b; CHECK(mdb_cursor_get(cu, &a, &b, MDB_FIRST)); CHECK(mdb_cursor_del(cu, 0)); } mdb_cursor_close(cu); }
    CHECK(mdb_txn_commit(t)); int pages = (int)((wchar() - before) / 4096); if (c >= commits / 2) total += pages;
    if (nr && runs[nr - 1][0] == pages) runs[nr - 1][1]++; else if (nr < 64) { runs[nr][0] = pages; runs[nr][1] = 1; nr++; }
  }
  printf("pages x commits:"); for (int i = 0; i < nr; i++) printf(" %dx%d", runs[i][0], runs[i][1]); printf("\nmean (second half) %.2f\n", (double)total / (commits - commits / 2));
  freestat(e, "at the end"); mdb_env_close(e); char cmd[256]; snprintf(cmd, sizeof cmd, "rm -rf %s", dir); system(cmd); return 0; }
