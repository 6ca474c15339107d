#include "models/path_text.h"

#include "ncclrr/trace/describe.h"

namespace ncclrr::viewer {

QString PathFromBytes(std::string_view bytes) {
  QString out;
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = Utf8SequenceAt(bytes, i);
    if (n == 0) {
      out += QChar(static_cast<char16_t>(0xdc00 + static_cast<unsigned char>(bytes[i])));
      ++i;
      continue;
    }
    out += QString::fromUtf8(bytes.data() + i, static_cast<qsizetype>(n));
    i += n;
  }
  return out;
}

std::string PathToBytes(const QString& path) {
  std::string out;
  qsizetype run = 0;  // start of the characters not yet written
  auto flush = [&](qsizetype end) {
    out += path.mid(run, end - run).toStdString();
    run = end;
  };
  for (qsizetype i = 0; i < path.size(); ++i) {
    const char16_t c = path.at(i).unicode();
    if (c >= 0xdc80 && c <= 0xdcff) {  // an escaped byte (bytes below 0x80 are never escaped)
      flush(i);
      out += static_cast<char>(c - 0xdc00);
      run = i + 1;
    }
  }
  flush(path.size());
  return out;
}

}  // namespace ncclrr::viewer
