#pragma once
// Text from traces and logs made safe to print or to put in JSON.
#include <cstddef>
#include <string>
#include <string_view>

namespace ncclrr {

// `text` with control bytes (and DEL) written as \xNN: strings from a trace (names, notes,
// hosts, paths) never reach a terminal as escape sequences.
std::string Printable(std::string_view text);
// Length (1-4) of the well-formed UTF-8 sequence that starts at text[i], or 0 when none does
// (a path in another encoding, a damaged trace).
size_t Utf8SequenceAt(std::string_view text, size_t i);
// For JSON writers, at a byte >= 0x80: appends the UTF-8 sequence at text[i], or "\ufffd" when
// none starts there, so the output stays valid UTF-8. Returns the bytes consumed (at least 1).
size_t AppendJsonUtf8(std::string_view text, size_t i, std::string* out);

}  // namespace ncclrr
