#pragma once
// Framing shared by the writer and the reader: the file preamble and frame headers of
// format.h, checksummed with CRC-32C.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/trace/format.h"

namespace ncclrr::internal {

// Preamble + header bytes.
std::vector<uint8_t> EncodeFilePreamble(const uint8_t* header, uint32_t header_size);

// A region of the payload stored transposed and delta-coded (format::kFlagTransposed).
struct TransposedRegion {
  uint32_t offset = 0;
  uint32_t row_words = 0;
  uint32_t rows = 0;
  bool empty() const { return rows == 0; }
  size_t bytes() const { return size_t{rows} * row_words * 8; }
};

// Frame header (+ extension) + payload, compressed with zstd when `compress` and it helps.
void EncodeFrame(const uint8_t* payload, uint32_t size, bool compress, void* zstd_cctx,
                 TransposedRegion region, std::vector<uint8_t>* scratch, std::vector<uint8_t>* out);

// Row-major <-> column-major delta-coded words, `rows` x `row_words`. Inverse of each other.
void TransposeDelta(const uint8_t* rows_in, uint8_t* columns_out, uint32_t rows,
                    uint32_t row_words);
void UntransposeDelta(const uint8_t* columns_in, uint8_t* rows_out, uint32_t rows,
                      uint32_t row_words);
// Delta-coded columns to the columns' values (UntransposeDelta without the transposing).
void UndeltaColumns(const uint8_t* columns_in, uint8_t* columns_out, uint32_t rows,
                    uint32_t row_words);

struct FrameHeader {
  uint32_t magic;
  uint16_t codec;
  uint16_t flags;
  uint32_t stored_size;
  uint32_t raw_size;
  uint32_t crc;
};
static_assert(sizeof(FrameHeader) == format::kFrameHeaderSize);

// A frame around bytes stored as given (codec none; `region`, three words, or null: marked
// transposed with that extension, whatever it says): fuzzers and crafted-input tests build
// checksum-valid frames the writer never would with it.
std::vector<uint8_t> EncodeStoredFrame(const std::vector<uint8_t>& stored, const uint32_t* region);

// CRC over the first 16 header bytes, the extension (if any) and the stored payload.
uint32_t FrameCrc(const FrameHeader& h, const uint8_t* extension, const uint8_t* stored);

}  // namespace ncclrr::internal
