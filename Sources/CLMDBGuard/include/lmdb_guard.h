#ifndef CANOPY_LMDB_GUARD_H
#define CANOPY_LMDB_GUARD_H

// Guarded calls into liblmdb: a crash inside LMDB on a damaged page becomes a return code.
//
// LMDB trusts its pages. A damaged branch or leaf page can make it read outside the file (SIGBUS past the file's
// end, SIGSEGV past the map or through a null pointer to a structure a damaged flag says exists) or fail one of its
// assertions, which calls abort(). Each `canopy_mdb_*` function below calls the LMDB function of the same name after a
// `sigsetjmp` (signal mask not saved: no system call), with the thread's guard pointing at it. A SIGSEGV or SIGBUS
// raised by the kernel while the thread is inside a guarded call, at an address inside that environment's map (or just
// past it) or in the first 64 KiB (never mapped: a null pointer plus a field's offset), and a failed LMDB assertion
// in that environment,
// jump back to the guarded call, which returns CANOPY_LMDB_CONTAINED. The environment is then marked damaged: every
// later guarded call on it returns CANOPY_LMDB_REFUSED at once, without entering LMDB. Any other fault goes to the
// handler that was installed before (the Swift runtime's backtracer, or the default action).
//
// Not contained: a fault outside a guarded call, a fault at another address (not a damaged page's doing),
// and damage a write transaction copies from a broken page into its own memory before anything faults.

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

/// Returned by a guarded call whose LMDB call crashed (the crash was contained). Outside LMDB's range of codes
/// (-30800 ... -30780) and errno values.
#define CANOPY_LMDB_CONTAINED (-30702)

/// Returned by a guarded call refused without entering LMDB: an earlier call on the same environment crashed.
#define CANOPY_LMDB_REFUSED (-30703)

/// Returned by the checked reads below for a key LMDB returned that runs past the data file (a damaged node).
#define CANOPY_LMDB_KEY_OUTSIDE (-30704)

/// Returned by the checked reads below for a value LMDB returned that runs past the data file (a damaged node).
#define CANOPY_LMDB_VALUE_OUTSIDE (-30705)

/// Returned by the checked reads below for a value of a checksummed table that fails its checksum.
#define CANOPY_LMDB_CHECKSUM_MISMATCH (-30706)

/// Flags of the checked reads below: the read is in a write transaction (its own pages live outside the map).
#define CANOPY_LMDB_CHECK_WRITING 1
/// Flags of the checked reads below: the table's values end with a checksum trailer, verified and cut off.
#define CANOPY_LMDB_CHECK_CHECKSUMMED 2

/// One environment's guard: where its map is, how much of the data file exists, and the first contained crash.
/// Created with canopy_lmdb_guard_create; read its fields only through the functions below.
typedef struct canopy_lmdb_guard {
    MDB_env *env;
    /// The map: [map_start, map_start + map_length), or NULL and 0 when it cannot be found (nothing is then
    /// contained or bounds-checked for this environment). Changed only while no guarded call runs (a remap).
    const char *map_start;
    size_t map_length;
    /// LMDB's page size (for messages).
    size_t page_size;
    /// Bytes of the data file known to exist (the file only grows while it is open); refreshed when a value seems
    /// to end past it.
    size_t file_end;
    /// Set once (never cleared) by the first contained crash, after the fields below.
    int damaged;
    /// Guards the fields below: the first crash records them.
    int recording;
    /// SIGSEGV or SIGBUS, or 0 for a failed assertion.
    int fault_signal;
    /// For a signal: 1 when the fault address was in the map (or just past it), 0 when it was in the first 64 KiB.
    int fault_in_map;
    /// The fault address minus map_start (in the map), or the address itself (in the first 64 KiB).
    size_t fault_offset;
    /// LMDB's assertion message (for an assertion), NUL-terminated.
    char assertion[400];
} canopy_lmdb_guard;

/// What the first contained crash of an environment was (for its error message).
typedef struct canopy_lmdb_damage {
    /// 1 when a crash was contained in this environment, 0 otherwise (then the other fields are 0).
    int damaged;
    /// SIGSEGV or SIGBUS, or 0 for a failed assertion.
    int fault_signal;
    /// For a signal: 1 when the fault address was in the map, 0 when it was a null pointer plus an offset.
    int fault_in_map;
    /// For a signal: where, as an offset into the data file (the page is offset / page size), or the address.
    size_t fault_offset;
    /// For an assertion: LMDB's message (file, line, expression, function).
    const char *assertion;
} canopy_lmdb_damage;

/// A guard for `env` (call it after mdb_env_create, before mdb_env_open), or NULL when out of memory. Installs the
/// process's SIGSEGV/SIGBUS handler on first use and LMDB's assertion callback for `env`. With the environment
/// variable CANOPY_LMDB_CONTAINMENT=off (read once per process), neither is installed: crashes end the process as
/// LMDB alone would (for tests that show what containment prevents).
canopy_lmdb_guard *canopy_lmdb_guard_create(MDB_env *env);

/// Frees the guard (after mdb_env_close).
void canopy_lmdb_guard_destroy(canopy_lmdb_guard *guard);

/// Reads the map's address and size from LMDB and the data file's size (after mdb_env_open and after a remap; no
/// guarded call of this environment may run meanwhile).
void canopy_lmdb_guard_refresh_map(canopy_lmdb_guard *guard);

/// The first contained crash of the guard's environment.
canopy_lmdb_damage canopy_lmdb_guard_damage(const canopy_lmdb_guard *guard);

/// Whether crashes are contained in this process (the handlers are installed): 0 with CANOPY_LMDB_CONTAINMENT=off.
int canopy_lmdb_containment_enabled(void);

/// Releases the environment's write lock held by the calling thread, for a write transaction abandoned after a
/// contained crash (LMDB's own abort would free a cursor that lived on the crashed call's stack). Finds the lock
/// file's map in /proc/self/maps and unlocks its writer mutex (glibc's robust mutex, whose owner must be this
/// thread). Returns 1 when released, 0 when it cannot be (another C library, MDB_NOLOCK, not the owner): the lock is
/// then released when the thread ends.
int canopy_lmdb_guard_release_write_lock(canopy_lmdb_guard *guard);

int canopy_lmdb_guard_readable_slow(canopy_lmdb_guard *guard, const void *data, size_t size);

/// Whether `size` bytes at `data`, a key or value LMDB returned, can be read without running off the data file: 1
/// when they lie inside the part of the map the file backs, 0 when they run past it (a damaged node's size or
/// offset). With `may_be_private` (a write transaction: values of pages it changed live in its own memory, not in the
/// map), a pointer outside the map is taken as such a page and passes.
static inline int canopy_lmdb_guard_readable(canopy_lmdb_guard *guard, const void *data, size_t size, int may_be_private) {
    if (guard->map_start == NULL) return 1;
    uintptr_t offset = (uintptr_t)data - (uintptr_t)guard->map_start;
    if (may_be_private && offset >= guard->map_length) return 1;
    size_t end = __atomic_load_n(&guard->file_end, __ATOMIC_RELAXED);
    if (offset <= end && size <= end - offset) return 1;
    return canopy_lmdb_guard_readable_slow(guard, data, size);
}

// The guarded calls: each returns what the LMDB function returns, CANOPY_LMDB_CONTAINED or CANOPY_LMDB_REFUSED.

int canopy_mdb_txn_begin(canopy_lmdb_guard *guard, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
int canopy_mdb_txn_commit(canopy_lmdb_guard *guard, MDB_txn *txn);
int canopy_mdb_txn_renew(canopy_lmdb_guard *guard, MDB_txn *txn);
int canopy_mdb_dbi_open(canopy_lmdb_guard *guard, MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int canopy_mdb_stat(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
int canopy_mdb_get(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int canopy_mdb_put(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags);
int canopy_mdb_del(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int canopy_mdb_drop(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, int del);
int canopy_mdb_cursor_open(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
int canopy_mdb_cursor_get(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
int canopy_mdb_cursor_put(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags);
int canopy_mdb_cursor_del(canopy_lmdb_guard *guard, MDB_cursor *cursor, unsigned int flags);
int canopy_mdb_env_copyfd2(canopy_lmdb_guard *guard, mdb_filehandle_t fd, unsigned int flags);

// Checked reads: the guarded call, then, when it found an entry, the checks every read makes (each in one call, so a
// scan's step is one call from Swift): the key and the value lie inside the data file (canopy_lmdb_guard_readable,
// with CANOPY_LMDB_CHECK_WRITING as `may_be_private`), and with CANOPY_LMDB_CHECK_CHECKSUMMED the value's trailer
// matches the key and the value (canopy_crc32c_sealed_payload_length), `data` then covering the value without it.
// They return what the guarded call returns, or CANOPY_LMDB_KEY_OUTSIDE, CANOPY_LMDB_VALUE_OUTSIDE or
// CANOPY_LMDB_CHECKSUM_MISMATCH (checked in that order), `key` and `data` then holding what LMDB returned.

/// canopy_mdb_cursor_get, then the checks.
int canopy_mdb_cursor_get_checked(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op, int checks);
/// canopy_mdb_get, then the checks (of the value: `key` is the caller's).
int canopy_mdb_get_checked(canopy_lmdb_guard *guard, MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, int checks);

/// Up to `capacity` steps of canopy_mdb_cursor_get_checked in one guarded call (a scan's read-ahead: one sigsetjmp and
/// one call from Swift for many entries): the first with `op`, the others with MDB_NEXT, entry i into keys[i] and
/// values[i], each checked as canopy_mdb_cursor_get_checked checks it. Stops at the first step that does not return
/// 0 and returns what that step returned (MDB_NOTFOUND past the end; a check's code, keys[*filled] and
/// values[*filled] then holding what LMDB returned), or 0 when all `capacity` steps found an entry. `*filled` counts
/// the entries found and checked, also after a contained crash (CANOPY_LMDB_CONTAINED). Only for a read-only
/// transaction, or a write transaction that writes nothing until the entries are used: a write can move the pages
/// the entries point into. With `prefix_length` > 0, an entry whose key does not start with the `prefix_length` bytes
/// at `prefix` is the last one read (it is counted, and MDB_NOTFOUND returned): a scan of a prefix reads nothing past
/// the entry a step-by-step scan would stop at.
int canopy_mdb_cursor_get_batch_checked(canopy_lmdb_guard *guard, MDB_cursor *cursor, MDB_val *keys, MDB_val *values,
                                        int capacity, MDB_cursor_op op, int checks, const void *prefix,
                                        size_t prefix_length, int *filled);
/// mdb_env_set_mapsize, then canopy_lmdb_guard_refresh_map.
int canopy_mdb_env_set_mapsize(canopy_lmdb_guard *guard, size_t size);

#endif
