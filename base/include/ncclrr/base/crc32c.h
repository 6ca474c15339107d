#pragma once
// CRC-32C (Castagnoli), the checksum of file headers and frames. Uses the SSE4.2 instruction
// when the CPU has it, a table otherwise; both give identical results.
#include <cstddef>
#include <cstdint>

namespace ncclrr {
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);
}  // namespace ncclrr
