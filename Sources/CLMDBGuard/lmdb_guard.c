// Guarded calls into liblmdb (see include/lmdb_guard.h for what is contained and what is not).
//
// Why a jump and not a check of every page: LMDB reads its pages inside its own C code, so a check done before a
// call could never be sure to cover every page the call reaches. The jump contains whatever the call reaches, at the
// cost of one sigsetjmp (without the signal mask: no system call) and two thread-local stores per call.

#define _GNU_SOURCE
#include "lmdb_guard.h"

#include "crc32c.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/// Bytes past the map's end where a fault still counts as the map's: LMDB derives every address it reads from a
/// page of the map plus a node's offset and key size (16 bits each), so a damaged node on one of the map's last pages
/// can reach that far. Nothing else a guarded call touches lives there (a fault means nothing is mapped there).
#define MAP_SLACK ((size_t)1 << 18)

/// The bottom of the address space that is never mapped (Linux's default vm.mmap_min_addr): a fault there during a
/// guarded call is a null pointer LMDB followed.
#define NULL_PAGE_LIMIT ((uintptr_t)1 << 16)

/// What the calling thread is doing: inside a guarded call of `guard` (with `jump` to return to), or not.
struct thread_guard {
    sigjmp_buf *jump;
    canopy_lmdb_guard *guard;
};

// initial-exec: a thread-local access is one instruction (no __tls_get_addr call), and safe in a signal handler.
static __thread struct thread_guard current_thread __attribute__((tls_model("initial-exec")));

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int containment_enabled;
static struct sigaction previous_segv;
static struct sigaction previous_bus;

/// Records the first crash of `guard`'s environment (later ones, also on other threads, keep the first).
static void record(canopy_lmdb_guard *guard, int signal_number, int in_map, size_t offset, const char *message) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&guard->recording, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        guard->fault_signal = signal_number;
        guard->fault_in_map = in_map;
        guard->fault_offset = offset;
        size_t length = 0;
        if (message != NULL) {
            while (message[length] != 0 && length < sizeof(guard->assertion) - 1) {
                guard->assertion[length] = message[length];
                length += 1;
            }
        }
        guard->assertion[length] = 0;
        __atomic_store_n(&guard->damaged, 1, __ATOMIC_RELEASE);
    } else {
        // Another thread is writing the first record: a few stores away.
        while (!__atomic_load_n(&guard->damaged, __ATOMIC_ACQUIRE)) {
        }
    }
}

/// Passes a fault that is not a contained one to the handler installed before ours (the Swift runtime's backtracer,
/// or the default action: restored, so that the faulting instruction, run again on return, ends the process).
static void chain(int signal_number, siginfo_t *info, void *context) {
    struct sigaction *previous = signal_number == SIGSEGV ? &previous_segv : &previous_bus;
    if (previous->sa_flags & SA_SIGINFO) {
        previous->sa_sigaction(signal_number, info, context);
        return;
    }
    if (previous->sa_handler == SIG_DFL || previous->sa_handler == SIG_IGN) {
        struct sigaction fallback;
        memset(&fallback, 0, sizeof(fallback));
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        sigaction(signal_number, &fallback, NULL);
        if (info == NULL || info->si_code <= 0) raise(signal_number);  // sent by a process: nothing re-runs
        return;
    }
    previous->sa_handler(signal_number);
}

static void fault_handler(int signal_number, siginfo_t *info, void *context) {
    struct thread_guard *thread = &current_thread;
    canopy_lmdb_guard *guard = thread->guard;
    // si_code > 0: raised by the kernel for this thread's own access (not sent by kill).
    if (thread->jump != NULL && guard != NULL && info != NULL && info->si_code > 0) {
        uintptr_t address = (uintptr_t)info->si_addr;
        uintptr_t start = (uintptr_t)guard->map_start;
        int in_map = start != 0 && address >= start && address - start < guard->map_length + MAP_SLACK;
        // A null pointer plus a field's offset: LMDB following a damaged node's flags to a structure the table does
        // not have (a duplicate-data cursor of a table without duplicates). Only when the map is known, as above.
        int null_page = start != 0 && address < NULL_PAGE_LIMIT;
        if (in_map || null_page) {
            record(guard, signal_number, in_map, in_map ? (size_t)(address - start) : (size_t)address, NULL);
            sigjmp_buf *jump = thread->jump;
            thread->jump = NULL;
            siglongjmp(*jump, 1);
        }
    }
    chain(signal_number, info, context);
}

/// LMDB's assertion callback: inside a guarded call of this environment, jump back instead of letting LMDB abort().
static void assertion_failed(MDB_env *env, const char *message) {
    struct thread_guard *thread = &current_thread;
    if (thread->jump != NULL && thread->guard != NULL && thread->guard->env == env) {
        record(thread->guard, 0, 0, 0, message);
        sigjmp_buf *jump = thread->jump;
        thread->jump = NULL;
        siglongjmp(*jump, 1);
    }
}

static void install(void) {
    const char *setting = getenv("CANOPY_LMDB_CONTAINMENT");
    if (setting != NULL && strcmp(setting, "off") == 0) return;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = fault_handler;
    sigemptyset(&action.sa_mask);
    // SA_NODEFER: the jump does not restore the signal mask (that would cost a system call per guarded call), so
    // the signal must not be blocked while the handler runs. SA_ONSTACK: on the thread's alternate stack if it has
    // one, as the handlers we chain to expect.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    if (sigaction(SIGSEGV, &action, &previous_segv) != 0) return;
    if (sigaction(SIGBUS, &action, &previous_bus) != 0) {
        sigaction(SIGSEGV, &previous_segv, NULL);
        return;
    }
    containment_enabled = 1;
}

int canopy_lmdb_containment_enabled(void) {
    pthread_once(&install_once, install);
    return containment_enabled;
}

canopy_lmdb_guard *canopy_lmdb_guard_create(MDB_env *env) {
    canopy_lmdb_guard *guard = calloc(1, sizeof(canopy_lmdb_guard));
    if (guard == NULL) return NULL;
    guard->env = env;
    if (canopy_lmdb_containment_enabled()) mdb_env_set_assert(env, assertion_failed);
    return guard;
}

void canopy_lmdb_guard_destroy(canopy_lmdb_guard *guard) {
    free(guard);
}

/// The data file's size now, or 0 when it cannot be told.
static size_t data_file_size(const canopy_lmdb_guard *guard) {
    mdb_filehandle_t descriptor;
    struct stat status;
    if (mdb_env_get_fd(guard->env, &descriptor) != 0 || fstat(descriptor, &status) != 0 || status.st_size < 0) return 0;
    return (size_t)status.st_size;
}

/// Raises file_end to the file's size now (never lowers it: the file does not shrink while it is open).
static void refresh_file_end(canopy_lmdb_guard *guard) {
    size_t size = data_file_size(guard);
    size_t known = __atomic_load_n(&guard->file_end, __ATOMIC_RELAXED);
    while (size > known && !__atomic_compare_exchange_n(&guard->file_end, &known, size, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/// The start of the mapping of the file (device, inode) from offset 0 that is `length` bytes long (any length when 0),
/// from /proc/self/maps; NULL unless there is exactly one.
static const char *find_mapping(dev_t device, ino_t inode, size_t length) {
    FILE *maps = fopen("/proc/self/maps", "re");
    if (maps == NULL) return NULL;
    long system_page = sysconf(_SC_PAGESIZE);
    size_t rounded = system_page > 0 ? (length + (size_t)system_page - 1) / (size_t)system_page * (size_t)system_page : length;
    const char *found = NULL;
    int matches = 0;
    char line[4096];
    while (fgets(line, sizeof(line), maps) != NULL) {
        unsigned long start, end, offset, number;
        unsigned int major_number, minor_number;
        if (sscanf(line, "%lx-%lx %*s %lx %x:%x %lu", &start, &end, &offset, &major_number, &minor_number, &number) != 6) continue;
        if (offset != 0 || number != (unsigned long)inode) continue;
        if (major_number != major(device) || minor_number != minor(device)) continue;
        if (length != 0 && end - start != rounded) continue;
        found = (const char *)start;
        matches += 1;
    }
    fclose(maps);
    return matches == 1 ? found : NULL;
}

/// Where the data file of `guard`'s environment is mapped, from /proc/self/maps: the mapping of that file (device and
/// inode) from offset 0, `length` bytes long (rounded up to whole system pages). LMDB does not say where its map is
/// (mdb_env_info's me_mapaddr is the address recorded for MDB_FIXEDMAP, not the map's). NULL when there is not
/// exactly one such mapping (LMDB forbids opening one environment twice in a process; a second mapping of the file
/// would make the answer ambiguous) or no /proc: then nothing is contained for this environment.
static const char *find_map(const canopy_lmdb_guard *guard, size_t length) {
    mdb_filehandle_t descriptor;
    struct stat status;
    if (mdb_env_get_fd(guard->env, &descriptor) != 0 || fstat(descriptor, &status) != 0) return NULL;
    return find_mapping(status.st_dev, status.st_ino, length);
}

int canopy_lmdb_guard_release_write_lock(canopy_lmdb_guard *guard) {
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
    unsigned int flags = 0;
    const char *path = NULL;
    if (mdb_env_get_flags(guard->env, &flags) != 0 || (flags & MDB_NOLOCK) || mdb_env_get_path(guard->env, &path) != 0 || path == NULL) return 0;
    char lock_path[4096];
    int written = snprintf(lock_path, sizeof(lock_path), (flags & MDB_NOSUBDIR) ? "%s-lock" : "%s/lock.mdb", path);
    if (written < 0 || (size_t)written >= sizeof(lock_path)) return 0;
    struct stat status;
    if (stat(lock_path, &status) != 0) return 0;
    const char *lock = find_mapping(status.st_dev, status.st_ino, 0);
    if (lock == NULL) return 0;
    // MDB_txninfo: magic (4 bytes), format (4), reader mutex, ... padded to a 64-byte cache line; then the writer
    // mutex, whose glibc layout starts with lock (4), count (4), owner thread id (4).
    uint32_t magic;
    memcpy(&magic, lock, sizeof(magic));
    if (magic != 0xBEEFC0DE) return 0;
    pthread_mutex_t *writer = (pthread_mutex_t *)(lock + 64);
    int owner;
    memcpy(&owner, lock + 64 + 8, sizeof(owner));
    if ((owner & 0x3FFFFFFF) != (int)gettid()) return 0;
    return pthread_mutex_unlock(writer) == 0;
#else
    (void)guard;
    return 0;
#endif
}

void canopy_lmdb_guard_refresh_map(canopy_lmdb_guard *guard) {
    MDB_envinfo info;
    const char *start = NULL;
    size_t length = 0;
    if (mdb_env_info(guard->env, &info) == 0) {
        start = find_map(guard, info.me_mapsize);
        length = start != NULL ? info.me_mapsize : 0;
    }
    guard->map_start = start;
    guard->map_length = length;
    MDB_stat stat;
    if (mdb_env_stat(guard->env, &stat) == 0) guard->page_size = stat.ms_psize;
    refresh_file_end(guard);
}

canopy_lmdb_damage canopy_lmdb_guard_damage(const canopy_lmdb_guard *guard) {
    canopy_lmdb_damage damage = {0, 0, 0, 0, NULL};
    if (__atomic_load_n(&guard->damaged, __ATOMIC_ACQUIRE)) {
        damage.damaged = 1;
        damage.fault_signal = guard->fault_signal;
        damage.fault_in_map = guard->fault_in_map;
        damage.fault_offset = guard->fault_offset;
        damage.assertion = guard->assertion;
    }
    return damage;
}

int canopy_lmdb_guard_readable_slow(canopy_lmdb_guard *guard, const void *data, size_t size) {
    uintptr_t offset = (uintptr_t)data - (uintptr_t)guard->map_start;
    refresh_file_end(guard);  // the file grew since we last looked (commits of this or another process)
    size_t end = __atomic_load_n(&guard->file_end, __ATOMIC_RELAXED);
    return offset <= end && size <= end - offset;
}

// The guarded call: refuse a damaged environment; otherwise mark the thread as inside a call of `guard`, call, unmark.
// A contained crash comes back from sigsetjmp a second time, with 1 (the handler has unmarked the thread). Guarded
// calls do not nest (LMDB calls nothing of ours back inside them), so there is no outer mark to restore. (`thread` is
// set before sigsetjmp and not changed after it, so it holds its value when the jump returns.)
// Runs `call` with the thread's guard set and returns `then`, an expression of the call's result `rc`, evaluated once
// the guard is cleared (the checked reads check what the call found there).
#define GUARDED_THEN(guard, call, then)                                    \
    do {                                                                   \
        if (__atomic_load_n(&(guard)->damaged, __ATOMIC_ACQUIRE))          \
            return CANOPY_LMDB_REFUSED;                                    \
        struct thread_guard *thread = &current_thread;                     \
        sigjmp_buf jump;                                                   \
        if (sigsetjmp(jump, 0) != 0) return CANOPY_LMDB_CONTAINED;         \
        thread->guard = (guard);                                           \
        thread->jump = &jump;                                              \
        int rc = (call);                                                   \
        thread->jump = NULL;                                               \
        return (then);                                                     \
    } while (0)

#define GUARDED(guard, call) GUARDED_THEN(guard, call, rc)

int canopy_mdb_txn_begin(canopy_lmdb_guard *guard, MDB_txn *parent, unsigned int flags, MDB_txn **txn) {
    GUARDED(guard, mdb_txn_begin(guard->env, parent, flags, txn));
}

int canopy_mdb_txn_commit(canopy_lmdb_guard *guard, MDB_txn *txn) {
    GUARDED(guard, mdb_txn_commit(txn));
}

int canopy_mdb_txn_renew(canopy_lmdb_guard *guard, MDB_txn *txn) {
    GUARDED(guard, mdb_txn_renew(txn));
}

int canopy_mdb_dbi_open(canopy_lmdb_guard *guard, MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi) {
    GUARDED(guard, mdb_dbi_open(txn, name, flags, dbi));
}

int canopy_mdb_stat(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat) {
    GUARDED(guard, mdb_stat(txn, dbi, stat));
}

int canopy_mdb_get(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) {
    GUARDED(guard, mdb_get(txn, dbi, key, data));
}

int canopy_mdb_put(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags) {
    GUARDED(guard, mdb_put(txn, dbi, key, data, flags));
}

int canopy_mdb_del(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) {
    GUARDED(guard, mdb_del(txn, dbi, key, data));
}

int canopy_mdb_drop(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, int del) {
    GUARDED(guard, mdb_drop(txn, dbi, del));
}

int canopy_mdb_cursor_open(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor) {
    GUARDED(guard, mdb_cursor_open(txn, dbi, cursor));
}

int canopy_mdb_cursor_get(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op) {
    GUARDED(guard, mdb_cursor_get(cursor, key, data, op));
}

/// Values longer than this are read with their memory asked for ahead (prefetch_long_value).
#define CANOPY_LMDB_PREFETCH_VALUES_OVER 256

/// Asks the CPU for all of a long value about to be checksummed and, for a scan's step in a read transaction
/// (`next`), for the memory just below the value's node, as much of it as the node takes, within its page: LMDB fills
/// a leaf page from its end down, so the entry after this one in key order usually lies there. A scan of long values
/// (a search index's blocks) in a map far larger than the caches misses on every value: asked for at once, the
/// misses overlap (and overlap this value's checksum) instead of each stalling the checksum's chain and the scan's
/// next step in turn. Only hints: a prefetch reads nothing and cannot fault, so a damaged page is met by the read
/// that reads it, as before.
static inline void prefetch_long_value(const canopy_lmdb_guard *guard, const MDB_val *key, const MDB_val *data, int next) {
    if (data->mv_size <= CANOPY_LMDB_PREFETCH_VALUES_OVER) return;
    for (size_t offset = 0; offset < data->mv_size; offset += 64) __builtin_prefetch((const char *)data->mv_data + offset);
    if (!next || guard->map_start == NULL || guard->page_size == 0) return;
    // The node: an 8-byte header, then the key, then the value (a value on overflow pages is not there: skipped).
    uintptr_t node = (uintptr_t)key->mv_data - 8;
    uintptr_t start = (uintptr_t)guard->map_start;
    if (node < start || (uintptr_t)data->mv_data != (uintptr_t)key->mv_data + key->mv_size) return;
    uintptr_t page = start + (node - start) / guard->page_size * guard->page_size;
    size_t span = 8 + key->mv_size + data->mv_size;
    uintptr_t low = node - page > span ? node - span : page;
    for (uintptr_t line = node & ~(uintptr_t)63; line > low; line -= 64) __builtin_prefetch((const void *)(line - 64));
}

/// The checks of a checked read that found an entry (see lmdb_guard.h), after its guarded call: the key and value
/// were found inside the data file, so reading them for the checksum cannot fault.
__attribute__((always_inline))
static inline int check_entry(canopy_lmdb_guard *guard, const MDB_val *key, MDB_val *data, int check_key, int checks) {
    int writing = (checks & CANOPY_LMDB_CHECK_WRITING) != 0;
    if (check_key && !canopy_lmdb_guard_readable(guard, key->mv_data, key->mv_size, writing)) return CANOPY_LMDB_KEY_OUTSIDE;
    if (!canopy_lmdb_guard_readable(guard, data->mv_data, data->mv_size, writing)) return CANOPY_LMDB_VALUE_OUTSIDE;
    if (checks & CANOPY_LMDB_CHECK_CHECKSUMMED) {
        prefetch_long_value(guard, key, data, check_key && !writing);
        long payload = canopy_crc32c_sealed_payload_length(key->mv_data, key->mv_size, data->mv_data, data->mv_size);
        if (payload < 0) return CANOPY_LMDB_CHECKSUM_MISMATCH;
        data->mv_size = (size_t)payload;
    }
    return 0;
}

// The checked reads: one call from Swift per read or scan step, the guarded call and the checks after it.

int canopy_mdb_cursor_get_checked(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op, int checks) {
    GUARDED_THEN(guard, mdb_cursor_get(cursor, key, data, op), rc != 0 ? rc : check_entry(guard, key, data, 1, checks));
}

int canopy_mdb_get_checked(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, int checks) {
    GUARDED_THEN(guard, mdb_get(txn, dbi, key, data), rc != 0 ? rc : check_entry(guard, key, data, 0, checks));
}

/// Whether `key` starts with the `length` bytes of `prefix` (a collection's 4-byte id, most often: compared as a word).
static inline int starts_with(const MDB_val *key, const void *prefix, size_t length) {
    if (key->mv_size < length) return 0;
    if (length == 4) {
        uint32_t found, wanted;
        memcpy(&found, key->mv_data, 4);
        memcpy(&wanted, prefix, 4);
        return found == wanted;
    }
    return memcmp(key->mv_data, prefix, length) == 0;
}

/// What canopy_mdb_cursor_get_batch_checked found is counted through `filled` as it goes (so that after a
/// contained crash the entries read before it are still counted).
int canopy_mdb_cursor_get_batch_checked(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *keys, MDB_val *values,
                                        int capacity, MDB_cursor_op op, int checks, const void *prefix,
                                        size_t prefix_length, int *filled) {
    *filled = 0;
    if (__atomic_load_n(&guard->damaged, __ATOMIC_ACQUIRE)) return CANOPY_LMDB_REFUSED;
    struct thread_guard *thread = &current_thread;
    sigjmp_buf jump;
    if (sigsetjmp(jump, 0) != 0) return CANOPY_LMDB_CONTAINED;
    thread->guard = guard;
    thread->jump = &jump;
    int rc = 0;
    // The checks run inside the guard here (a checked read otherwise runs them after it): they read only bytes found
    // inside the data file, so they cannot fault, and a fault would be contained all the same.
    for (int index = 0; index < capacity; index++) {
        rc = mdb_cursor_get(cursor, &keys[index], &values[index], op);
        if (rc == 0) rc = check_entry(guard, &keys[index], &values[index], 1, checks);
        if (rc != 0) break;
        *filled = index + 1;
        // Past the keys the scan wants: this entry ends it, and nothing after it is read (a step would read no
        // further, so damage there is not the scan's to meet).
        if (prefix_length > 0 && !starts_with(&keys[index], prefix, prefix_length)) {
            rc = MDB_NOTFOUND;
            break;
        }
        op = MDB_NEXT;
    }
    thread->jump = NULL;
    return rc;
}

int canopy_mdb_cursor_put(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags) {
    GUARDED(guard, mdb_cursor_put(cursor, key, data, flags));
}

int canopy_mdb_cursor_del(canopy_lmdb_guard *guard, MDB_cursor *cursor, unsigned int flags) {
    GUARDED(guard, mdb_cursor_del(cursor, flags));
}

int canopy_mdb_env_copyfd2(canopy_lmdb_guard *guard, mdb_filehandle_t fd, unsigned int flags) {
    GUARDED(guard, mdb_env_copyfd2(guard->env, fd, flags));
}

static int set_mapsize_and_refresh(canopy_lmdb_guard *guard, size_t size) {
    int rc = mdb_env_set_mapsize(guard->env, size);
    if (rc == 0) canopy_lmdb_guard_refresh_map(guard);
    return rc;
}

int canopy_mdb_env_set_mapsize(canopy_lmdb_guard *guard, size_t size) {
    GUARDED(guard, set_mapsize_and_refresh(guard, size));
}
