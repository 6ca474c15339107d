#include "ncclrr/trace/capture_side_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ncclrr {

bool CaptureFileNameIsSafe(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name.find('\0') == std::string::npos;
}

std::string CaptureFilePath(const std::string& dir, const CaptureRefData& ref) {
  return dir + "/" + ref.file;
}

StatusOr<std::string> ReadCapturedBuffer(const std::string& dir, const CaptureRefData& ref) {
  // The recorder writes a bare file name beside the trace; anything else (an absolute path,
  // "..") would read outside the trace directory.
  if (!CaptureFileNameIsSafe(ref.file))
    return Corrupt("a capture reference names '" + ref.file +
                   "', not a file of the trace directory (the recorder writes bare names such "
                   "as <host>-<pid>.capture); the trace is damaged or was made to read elsewhere");
  const std::string path = CaptureFilePath(dir, ref);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return IoError("capture side file " + path + " cannot be read (" + std::strerror(errno) +
                   "): copy the .capture files along with the .ncclrr files");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (ref.offset > size || ref.bytes > size - ref.offset)  // never computes offset + bytes
    return Corrupt("capture side file " + path + " is truncated: it holds " + std::to_string(size) +
                   " bytes, the trace references " + std::to_string(ref.bytes) +
                   " bytes at offset " + std::to_string(ref.offset) +
                   " (a full disk or an interrupted copy, or a damaged trace)");
  std::ifstream in(path, std::ios::binary);
  std::string bytes(ref.bytes, '\0');
  in.seekg(static_cast<std::streamoff>(ref.offset));
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    return IoError("capture side file " + path + ": reading " + std::to_string(ref.bytes) +
                   " bytes at offset " + std::to_string(ref.offset) + " failed");
  return bytes;
}

}  // namespace ncclrr
