// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI, ext4 and LevelDB.
// A CPU instruction computes it 8 bytes at a time where there is one; the table below gives the same result byte by
// byte elsewhere. The choice is made once, at load time.

#include "crc32c.h"

#include <string.h>

#define CRC32C_POLYNOMIAL 0x82F63B78u

static uint32_t table[256];
static int use_hardware;

static uint32_t crc32c_table(uint32_t crc, const unsigned char *bytes, size_t length) {
    while (length--) crc = table[(crc ^ *bytes++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

// The instruction takes three cycles and starts one a cycle: one chain of words runs at a third of its speed. A
// long buffer is checksummed as three chains of INTERLEAVED_LENGTH bytes at once (a search block is about 1.6 KB),
// then the first two are moved past the bytes after them (`shift_by_interleaved_length`: CRC32C of zeros is linear)
// and combined, as Mark Adler's crc32c.c does.
#define INTERLEAVED_LENGTH 256

// shift_by_interleaved_length[k][b]: the CRC register with byte b at byte k (the rest 0), moved past
// INTERLEAVED_LENGTH zero bytes. Filled at load time.
static uint32_t shift_by_interleaved_length[4][256];

__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *bytes, size_t length) {
    uint64_t wide = crc;
    while (length >= 3 * INTERLEAVED_LENGTH) {
        uint64_t second = 0, third = 0;
        const unsigned char *end = bytes + INTERLEAVED_LENGTH;
        do {
            uint64_t words[3];
            memcpy(&words[0], bytes, 8);
            memcpy(&words[1], bytes + INTERLEAVED_LENGTH, 8);
            memcpy(&words[2], bytes + 2 * INTERLEAVED_LENGTH, 8);
            wide = _mm_crc32_u64(wide, words[0]);
            second = _mm_crc32_u64(second, words[1]);
            third = _mm_crc32_u64(third, words[2]);
            bytes += 8;
        } while (bytes < end);
        uint32_t first = (uint32_t)wide;
        first = shift_by_interleaved_length[0][first & 0xFF] ^ shift_by_interleaved_length[1][(first >> 8) & 0xFF]
              ^ shift_by_interleaved_length[2][(first >> 16) & 0xFF] ^ shift_by_interleaved_length[3][first >> 24];
        first ^= (uint32_t)second;
        first = shift_by_interleaved_length[0][first & 0xFF] ^ shift_by_interleaved_length[1][(first >> 8) & 0xFF]
              ^ shift_by_interleaved_length[2][(first >> 16) & 0xFF] ^ shift_by_interleaved_length[3][first >> 24];
        wide = first ^ (uint32_t)third;
        bytes += 2 * INTERLEAVED_LENGTH;
        length -= 3 * INTERLEAVED_LENGTH;
    }
    // Four words per turn: the loop's own compare and branch once per 32 bytes (a record is usually 50-150 bytes).
    while (length >= 32) {
        uint64_t words[4];
        memcpy(words, bytes, 32);
        wide = _mm_crc32_u64(wide, words[0]);
        wide = _mm_crc32_u64(wide, words[1]);
        wide = _mm_crc32_u64(wide, words[2]);
        wide = _mm_crc32_u64(wide, words[3]);
        bytes += 32;
        length -= 32;
    }
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        wide = _mm_crc32_u64(wide, word);
        bytes += 8;
        length -= 8;
    }
    crc = (uint32_t)wide;
    // The tail (a record is rarely a multiple of 8 bytes) in at most three steps rather than byte by byte.
    if (length & 4) {
        uint32_t word;
        memcpy(&word, bytes, 4);
        crc = _mm_crc32_u32(crc, word);
        bytes += 4;
    }
    if (length & 2) {
        uint16_t half;
        memcpy(&half, bytes, 2);
        crc = _mm_crc32_u16(crc, half);
        bytes += 2;
    }
    if (length & 1) crc = _mm_crc32_u8(crc, *bytes);
    return crc;
}

// The register moved past one zero byte is a linear map of its 32 bits (a 32 x 32 matrix over GF(2), a column per bit);
// past 2^k bytes, that matrix squared k times.
static uint32_t gf2_matrix_times(const uint32_t *matrix, uint32_t vector) {
    uint32_t sum = 0;
    for (; vector; vector >>= 1, matrix++) {
        if (vector & 1) sum ^= *matrix;
    }
    return sum;
}

static void gf2_matrix_square(uint32_t *square, const uint32_t *matrix) {
    for (int n = 0; n < 32; n++) square[n] = gf2_matrix_times(matrix, matrix[n]);
}

static void fill_shift_by_interleaved_length(void) {
    uint32_t bit[32], power[32];
    // One zero bit: the register shifts right, the polynomial folded in when bit 0 falls out.
    bit[0] = CRC32C_POLYNOMIAL;
    for (int n = 1; n < 32; n++) bit[n] = 1u << (n - 1);
    gf2_matrix_square(power, bit);   // 2 bits
    gf2_matrix_square(bit, power);   // 4 bits
    gf2_matrix_square(power, bit);   // 1 byte
    for (size_t bytes = 1; bytes < INTERLEAVED_LENGTH; bytes *= 2) {  // INTERLEAVED_LENGTH is a power of two
        gf2_matrix_square(bit, power);
        memcpy(power, bit, sizeof power);
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int k = 0; k < 4; k++) shift_by_interleaved_length[k][n] = gf2_matrix_times(power, n << (8 * k));
    }
}

static int cpu_has_crc32c(void) {
    __builtin_cpu_init();  // (this runs as a constructor, possibly before the compiler runtime's own)
    return __builtin_cpu_supports("sse4.2");
}

#elif defined(__aarch64__) && defined(__linux__)
#include <arm_acle.h>
#include <sys/auxv.h>
#include <asm/hwcap.h>

__attribute__((target("crc")))
static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *bytes, size_t length) {
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc = __crc32cd(crc, word);
        bytes += 8;
        length -= 8;
    }
    if (length & 4) {
        uint32_t word;
        memcpy(&word, bytes, 4);
        crc = __crc32cw(crc, word);
        bytes += 4;
    }
    if (length & 2) {
        uint16_t half;
        memcpy(&half, bytes, 2);
        crc = __crc32ch(crc, half);
        bytes += 2;
    }
    if (length & 1) crc = __crc32cb(crc, *bytes);
    return crc;
}

static int cpu_has_crc32c(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }

#else
static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *bytes, size_t length) {
    return crc32c_table(crc, bytes, length);
}

static int cpu_has_crc32c(void) { return 0; }
#endif

__attribute__((constructor))
static void crc32c_initialize(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t crc = i;
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (CRC32C_POLYNOMIAL & (0u - (crc & 1)));
        table[i] = crc;
    }
    use_hardware = cpu_has_crc32c();
#if defined(__x86_64__)
    fill_shift_by_interleaved_length();
#endif
}

uint32_t canopy_crc32c(uint32_t crc, const void *data, size_t length) {
    crc = ~crc;
    crc = use_hardware ? crc32c_hardware(crc, data, length) : crc32c_table(crc, data, length);
    return ~crc;
}

uint32_t canopy_crc32c_pair(const void *first, size_t first_length, const void *second, size_t second_length) {
    uint32_t crc = ~0u;
    if (use_hardware) {
        crc = crc32c_hardware(crc, first, first_length);
        crc = crc32c_hardware(crc, second, second_length);
    } else {
        crc = crc32c_table(crc, first, first_length);
        crc = crc32c_table(crc, second, second_length);
    }
    return ~crc;
}

#if defined(__x86_64__)
// The pair's checksum with the hardware loop inlined for both buffers (same target, so the compiler may): a
// checksummed read's whole check without a call per buffer.
__attribute__((target("sse4.2")))
static uint32_t crc32c_pair_hardware(const void *first, size_t first_length, const void *second, size_t second_length) {
    return ~crc32c_hardware(crc32c_hardware(~0u, first, first_length), second, second_length);
}
#else
static uint32_t crc32c_pair_hardware(const void *first, size_t first_length, const void *second, size_t second_length) {
    return ~crc32c_hardware(crc32c_hardware(~0u, first, first_length), second, second_length);
}
#endif

long canopy_crc32c_sealed_payload_length(const void *key, size_t key_length, const void *stored, size_t stored_length) {
    if (stored_length < 4) return -1;
    size_t payload_length = stored_length - 4;
    const unsigned char *trailer = (const unsigned char *)stored + payload_length;
    uint32_t recorded = ((uint32_t)trailer[0] << 24) | ((uint32_t)trailer[1] << 16) | ((uint32_t)trailer[2] << 8) | trailer[3];
    uint32_t computed = use_hardware ? crc32c_pair_hardware(key, key_length, stored, payload_length)
                                     : canopy_crc32c_pair(key, key_length, stored, payload_length);
    return computed == recorded ? (long)payload_length : -1;
}

int canopy_crc32c_is_hardware(void) { return use_hardware; }

uint32_t canopy_crc32c_portable(uint32_t crc, const void *data, size_t length) {
    return ~crc32c_table(~crc, data, length);
}
