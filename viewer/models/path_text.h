#pragma once
// File paths as QStrings without losing bytes. Linux paths are bytes; a name in another encoding
// (Latin-1 "caf\xe9") is not UTF-8, and Qt's conversions replace such bytes with U+FFFD, so the
// path no longer names the file ("does not exist"). Here a byte that does not start a UTF-8
// sequence becomes the lone surrogate U+DC00 + byte (Python's "surrogateescape"), and back.
#include <QString>
#include <string>
#include <string_view>

namespace ncclrr::viewer {

QString PathFromBytes(std::string_view bytes);
std::string PathToBytes(const QString& path);

}  // namespace ncclrr::viewer
