#ifndef CRC32C_H
#define CRC32C_H
/* CRC-32C (Castagnoli; the polynomial of iSCSI, RFC 3720 B.4, and ext4's
   metadata), the checksum of moat.index.cache records, which a lookup
   checks. x86-64 has an instruction for it (SSE 4.2, detected at run
   time): 7-8 GB/s on records of 64-400 bytes where zlib's crc32 managed
   0.4-1.4 (doc/performance.md). Other CPUs use slice-by-8 tables. */

#include <stddef.h>
#include <stdint.h>

/* The CRC of data continuing crc (0 to start), as zlib's crc32() chains:
   crc32c(crc32c(0, a, n), b, m) is the CRC of a followed by b. */
uint32_t crc32c(uint32_t crc, const void *data, size_t size);

/* The table version, whatever the CPU has (tests compare the two). */
uint32_t crc32c_sw(uint32_t crc, const void *data, size_t size);

#endif
