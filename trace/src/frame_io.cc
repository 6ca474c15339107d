#include "frame_io.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "ncclrr/base/crc32c.h"

namespace ncclrr::internal {

std::vector<uint8_t> EncodeFilePreamble(const uint8_t* header, uint32_t header_size) {
  std::vector<uint8_t> out(format::kFilePreambleSize + header_size);
  uint8_t* p = out.data();
  std::memcpy(p, format::kFileMagic, 8);
  std::memcpy(p + 8, &format::kMajor, 2);
  std::memcpy(p + 10, &format::kMinor, 2);
  std::memcpy(p + 12, &header_size, 4);
  // The checksum covers the version and size fields too, so no bit of the preamble after the
  // magic can change unnoticed.
  const uint32_t crc = Crc32c(header, header_size, Crc32c(p + 8, 8));
  std::memcpy(p + 16, &crc, 4);
  std::memcpy(p + 20, header, header_size);
  return out;
}

uint32_t FrameCrc(const FrameHeader& h, const uint8_t* extension, const uint8_t* stored) {
  uint32_t c = Crc32c(&h, 16);
  if (h.flags & format::kFlagTransposed) c = Crc32c(extension, format::kFrameExtensionSize, c);
  return Crc32c(stored, h.stored_size, c);
}

std::vector<uint8_t> EncodeStoredFrame(const std::vector<uint8_t>& stored, const uint32_t* region) {
  FrameHeader h{};
  h.magic = format::kFrameMagic;
  h.codec = static_cast<uint16_t>(format::Codec::kNone);
  h.flags = region ? format::kFlagTransposed : 0;
  h.stored_size = h.raw_size = static_cast<uint32_t>(stored.size());
  uint8_t ext[format::kFrameExtensionSize] = {};
  if (region) std::memcpy(ext, region, sizeof ext);
  h.crc = FrameCrc(h, ext, stored.data());
  const size_t e = region ? sizeof ext : 0;
  std::vector<uint8_t> out(sizeof h + e + stored.size());
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, ext, e);
  if (!stored.empty()) std::memcpy(out.data() + sizeof h + e, stored.data(), stored.size());
  return out;
}

// Tiles of 256 rows keep the source rows in cache while each column is written.
constexpr uint32_t kTileRows = 256;

void TransposeDelta(const uint8_t* in, uint8_t* out, uint32_t rows, uint32_t row_words) {
  std::vector<uint64_t> prev(row_words, 0);
  for (uint32_t i0 = 0; i0 < rows; i0 += kTileRows) {
    const uint32_t i1 = std::min(rows, i0 + kTileRows);
    for (uint32_t w = 0; w < row_words; ++w) {
      uint64_t p = prev[w];
      uint8_t* col = out + (size_t{w} * rows) * 8;
      for (uint32_t i = i0; i < i1; ++i) {
        uint64_t x;
        std::memcpy(&x, in + (size_t{i} * row_words + w) * 8, 8);
        const uint64_t d = x - p;
        std::memcpy(col + size_t{i} * 8, &d, 8);
        p = x;
      }
      prev[w] = p;
    }
  }
}

void UntransposeDelta(const uint8_t* in, uint8_t* out, uint32_t rows, uint32_t row_words) {
  std::vector<uint64_t> prev(row_words, 0);
  for (uint32_t i0 = 0; i0 < rows; i0 += kTileRows) {
    const uint32_t i1 = std::min(rows, i0 + kTileRows);
    for (uint32_t w = 0; w < row_words; ++w) {
      uint64_t p = prev[w];
      const uint8_t* col = in + (size_t{w} * rows) * 8;
      for (uint32_t i = i0; i < i1; ++i) {
        uint64_t d;
        std::memcpy(&d, col + size_t{i} * 8, 8);
        p += d;
        std::memcpy(out + (size_t{i} * row_words + w) * 8, &p, 8);
      }
      prev[w] = p;
    }
  }
}

void UndeltaColumns(const uint8_t* in, uint8_t* out, uint32_t rows, uint32_t row_words) {
  for (size_t i = 0; i < size_t{rows} * row_words; i += rows) {
    uint64_t p = 0;
    for (size_t j = i; j < i + rows; ++j) {
      uint64_t d;
      std::memcpy(&d, in + j * 8, 8);
      p += d;
      std::memcpy(out + j * 8, &p, 8);
    }
  }
}

void EncodeFrame(const uint8_t* payload, uint32_t size, bool compress, void* zstd_cctx,
                 TransposedRegion region, std::vector<uint8_t>* scratch,
                 std::vector<uint8_t>* out) {
  FrameHeader h{format::kFrameMagic, static_cast<uint16_t>(format::Codec::kNone), 0, size, size, 0};
  if (!region.empty() && region.offset + region.bytes() <= size) {
    // Copy the payload with the region transposed; compress that copy instead.
    h.flags |= format::kFlagTransposed;
    scratch->resize(size);
    std::memcpy(scratch->data(), payload, region.offset);
    TransposeDelta(payload + region.offset, scratch->data() + region.offset, region.rows,
                   region.row_words);
    const size_t tail = region.offset + region.bytes();
    std::memcpy(scratch->data() + tail, payload + tail, size - tail);
    payload = scratch->data();
  }
  const size_t ext = (h.flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
  out->resize(format::kFrameHeaderSize + ext + ZSTD_compressBound(size));
  uint8_t* extension = out->data() + format::kFrameHeaderSize;
  if (ext) {
    const uint32_t e[3] = {region.offset, region.row_words, region.rows};
    std::memcpy(extension, e, sizeof e);
  }
  uint8_t* body = extension + ext;
  size_t stored = size;
  if (compress && zstd_cctx != nullptr) {
    const size_t z = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(zstd_cctx), body,
                                       ZSTD_compressBound(size), payload, size, 1);
    if (!ZSTD_isError(z) && z < size) {
      stored = z;
      h.codec = static_cast<uint16_t>(format::Codec::kZstd);
    }
  }
  if (h.codec == static_cast<uint16_t>(format::Codec::kNone)) std::memcpy(body, payload, size);
  h.stored_size = static_cast<uint32_t>(stored);
  h.crc = FrameCrc(h, extension, body);
  std::memcpy(out->data(), &h, sizeof h);
  out->resize(format::kFrameHeaderSize + ext + stored);
}

}  // namespace ncclrr::internal
