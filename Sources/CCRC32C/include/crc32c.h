#ifndef CANOPY_CRC32C_H
#define CANOPY_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Continues a CRC32C (Castagnoli) over `length` bytes at `data`. Start with 0; the result of one call is the `crc`
/// of the next, so a value spread over several buffers is checksummed piece by piece. Uses the CPU's crc32
/// instruction (SSE4.2 on x86-64, the CRC extension on ARMv8) where it has one, a table otherwise; both give the same
/// result.
uint32_t canopy_crc32c(uint32_t crc, const void *data, size_t length);

/// 1 when canopy_crc32c uses a CPU instruction, 0 when it uses the table.
// The CRC32C of `first` followed by `second` (as canopy_crc32c(canopy_crc32c(0, first), second)), in one call: a
// checksummed value's trailer covers its key and its bytes, and every read verifies one.
uint32_t canopy_crc32c_pair(const void *first, size_t first_length, const void *second, size_t second_length);

// The length of the payload of `stored` (a value followed by the big-endian CRC32C of `key` and that value), or -1
// when `stored` is shorter than the trailer or the trailer does not match: a checksummed read's whole check, one call.
long canopy_crc32c_sealed_payload_length(const void *key, size_t key_length, const void *stored, size_t stored_length);

int canopy_crc32c_is_hardware(void);

/// canopy_crc32c computed with the table only (tests compare it with the instruction).
uint32_t canopy_crc32c_portable(uint32_t crc, const void *data, size_t length);

#endif
