/*
 * What one 4 KiB pwrite costs the kernel in a file whose page cache holds large folios (Linux >= 6.16 gives ext4
 * regular files large folios; XFS has had them longer). LMDB without MDB_WRITEMAP writes a commit's dirty pages with
 * pwrite/pwritev, contiguous pages up to 64 at a time: a big commit (a bulk load) leaves the file's page cache in
 * folios of up to 256 KiB, and a sequential read through the map (readahead, here up to read_ahead_kb = 8 MiB) in
 * folios of up to 2 MiB. A later small commit writes single pages into those folios, and ext4's write path
 * (ext4_da_write_begin -> ext4_block_write_begin, then block_commit_write) walks the buffer head of every block of
 * the folio, or first allocates them all: the cost grows with the folio's size and, once the file's buffer heads no
 * longer stay in the CPU's caches, with the file's size. This program shows it without LMDB; the manual view's DocC
 * article ("What a move costs") has the figures measured on the 2-core machine of session 11.
 *
 *   cc -O2 -o /tmp/pwrite-folios pwrite-folios.c
 *   /tmp/pwrite-folios SIZE_MB FILL_KB MODE PATH WRITES
 *
 * fills PATH with SIZE_MB of data written FILL_KB at a time, prepares the page cache by MODE, then times WRITES
 * single-page pwrites at random page offsets (CPU time of the thread per write). MODE letters: x nothing (the fill's
 * folios stay), s fsync, d fsync + POSIX_FADV_DONTNEED (the file out of the page cache), m read every page through a
 * shared read-only map (readahead), R the same with MADV_RANDOM (no readahead: one page per fault). Examples:
 *   pwrite-folios 346 256 x /tmp/f 50000   # as after a 1M-row fill: 3.4-9 us per write (4 MB: 0.8 us)
 *   pwrite-folios 346 4   x /tmp/f 50000   # the same file written a page at a time: ~1.1 us
 *   pwrite-folios 346 256 dm /tmp/f 50000  # out of the cache, read back in order through the map: ~22 us
 *   pwrite-folios 346 256 dR /tmp/f 50000  # the same with MADV_RANDOM (LMDB's MDB_NORDAHEAD): ~1.4 us
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s SIZE_MB FILL_KB MODE PATH WRITES\n", argv[0]);
        return 2;
    }
    long size = atol(argv[1]) * 1024 * 1024, chunk = atol(argv[2]) * 1024;
    const char *mode = argv[3], *path = argv[4];
    long writes = atol(argv[5]);
    if (size <= 0 || chunk <= 0 || chunk % 4096 != 0 || writes <= 0) {
        fprintf(stderr, "SIZE_MB and WRITES must be positive, FILL_KB a positive multiple of 4\n");
        return 2;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    char *buffer = aligned_alloc(4096, chunk);
    if (fd < 0 || buffer == NULL) {
        perror(path);
        return 1;
    }
    memset(buffer, 7, chunk);
    for (long offset = 0; offset < size; offset += chunk) {
        if (pwrite(fd, buffer, chunk, offset) != chunk) { perror("pwrite"); return 1; }
    }
    if (strchr(mode, 's') || strchr(mode, 'd')) fsync(fd);
    if (strchr(mode, 'd')) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (strchr(mode, 'm') || strchr(mode, 'R')) {
        volatile char *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) { perror("mmap"); return 1; }
        if (strchr(mode, 'R')) madvise((void *)map, size, MADV_RANDOM);
        long sum = 0;
        for (long offset = 0; offset < size; offset += 4096) sum += map[offset];
        munmap((void *)map, size);
        if (sum == 42) puts("");
    }
    srand(1);
    long pages = size / 4096;
    double start = thread_cpu_ns();
    for (long i = 0; i < writes; i++) {
        long page = ((long)rand() * 7919L) % pages;
        if (pwrite(fd, buffer, 4096, page * 4096) != 4096) { perror("pwrite"); return 1; }
    }
    printf("%ld MB filled %ld KB at a time, mode %s: %.2f us of thread CPU per 4 KiB pwrite\n", size >> 20, chunk >> 10,
           mode, (thread_cpu_ns() - start) / writes / 1e3);
    close(fd);
    unlink(path);
    return 0;
}
