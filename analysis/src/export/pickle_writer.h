#pragma once
// A pickle (protocol 2) writer for the values a JSON document holds, so `ncclrr export --format
// flight-recorder` writes what PyTorch's Flight Recorder writes by default and its `fr_trace`
// reads with pickle.load. Objects become dicts, arrays lists, strings str, integers int, doubles
// float, null None, booleans bool. A dict or list can also be written piece by piece (Begin,
// items, End), so a dump with millions of entries is never held in memory.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string_view>

namespace ncclrr::analysis {

class PickleWriter {
 public:
  explicit PickleWriter(std::ostream& out);  // writes the protocol header
  void Value(const nlohmann::json& v);
  void Key(std::string_view k) { String(k); }  // inside a dict: key, then its value
  void BeginDict();
  void EndDict();
  void BeginList();
  void EndList();
  void Finish();  // the STOP opcode: the pickle is complete

 private:
  void String(std::string_view s);
  void Int(int64_t v);
  void Float(double v);
  std::ostream& out_;
};

}  // namespace ncclrr::analysis
