#pragma once
// Framing shared by the writer and the reader: the file preamble and frame headers of
// format.h, checksummed with CRC-32C.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/format.h"

namespace ncclrr::internal {

// Preamble + header bytes.
std::vector<uint8_t> EncodeFilePreamble(const uint8_t* header, uint32_t header_size);

// Frame header + payload (compressed with zstd when `compress` and it helps).
void EncodeFrame(const uint8_t* payload, uint32_t size, bool compress, void* zstd_cctx,
                 std::vector<uint8_t>* out);

struct FrameHeader {
  uint32_t magic;
  uint16_t codec;
  uint16_t flags;
  uint32_t stored_size;
  uint32_t raw_size;
  uint32_t crc;
};
static_assert(sizeof(FrameHeader) == format::kFrameHeaderSize);

uint32_t FrameCrc(const FrameHeader& h, const uint8_t* stored);

}  // namespace ncclrr::internal
