// A pickle reader for plain data: a stack machine over the opcodes of pickle protocols 2-5 that
// build None, bools, ints, floats, str, bytes, lists, tuples and dicts, with the memo. Every read
// is bounds-checked; errors say which opcode at which offset and what was expected.
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "import/py_data.h"

namespace ncclrr::py {
namespace {

class PickleMachine {
 public:
  explicit PickleMachine(std::string_view b) : b_(b) {}

  StatusOr<Document> Run() {
    while (pos_ < b_.size()) {
      const size_t at = pos_;
      const uint8_t op = static_cast<uint8_t>(b_[pos_++]);
      if (op == '.') return Finish(at);
      Status s = Step(op);
      if (!s.ok()) return Corrupt(Where(op, at) + s.message());
    }
    return Corrupt("the pickle ends after " + std::to_string(b_.size()) +
                   " bytes without its STOP opcode ('.'): the file is truncated");
  }

 private:
  static std::string Where(uint8_t op, size_t at) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "pickle opcode 0x%02x at offset %zu: ", op, at);
    return buf;
  }

  StatusOr<Document> Finish(size_t at) {
    if (stack_.size() != 1)
      return Corrupt(Where('.', at) + "STOP with " + std::to_string(stack_.size()) +
                     " values on the stack, expected exactly one");
    doc_.set_root(stack_.back());
    return std::move(doc_);
  }

  // Reads n bytes; false (and no read) past the end.
  bool Take(size_t n, std::string_view* out) {
    if (n > b_.size() - pos_) return false;
    *out = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool TakeLe(size_t n, uint64_t* out) {
    std::string_view v;
    if (!Take(n, &v)) return false;
    *out = 0;
    for (size_t k = 0; k < n; ++k) *out |= uint64_t{static_cast<uint8_t>(v[k])} << (8 * k);
    return true;
  }

  Status Truncated(size_t n) {
    return Corrupt("needs " + std::to_string(n) + " more byte(s) but the file ends at offset " +
                   std::to_string(b_.size()) + ": truncated");
  }

  Status Push(Value v) {
    stack_.push_back(doc_.Add(std::move(v)));
    return Status::Ok();
  }
  Status PushInt(int64_t i) {
    Value v;
    v.kind = Kind::kInt;
    v.i = i;
    return Push(std::move(v));
  }
  Status PushText(Kind kind, size_t len_bytes) {
    uint64_t n = 0;
    if (!TakeLe(len_bytes, &n)) return Truncated(len_bytes);
    std::string_view text;
    if (!Take(n, &text)) return Truncated(n);
    Value v;
    v.kind = kind;
    v.s = std::string(text);
    return Push(std::move(v));
  }
  Status PushLong(size_t len_bytes) {
    uint64_t n = 0;
    if (!TakeLe(len_bytes, &n)) return Truncated(len_bytes);
    if (n > 8) return Corrupt("an integer of " + std::to_string(n) + " bytes: more than 64 bits");
    uint64_t u = 0;
    if (!TakeLe(n, &u)) return Truncated(n);
    if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);  // sign
    return PushInt(static_cast<int64_t>(u));
  }
  Status PushContainer(Kind kind, std::vector<uint32_t> items) {
    Value v;
    v.kind = kind;
    v.items = std::move(items);
    return Push(std::move(v));
  }

  // Pops everything above the topmost mark, and the mark.
  Status PopMark(std::vector<uint32_t>* items) {
    if (marks_.empty()) return Corrupt("no MARK before it");
    const size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) return Corrupt("its MARK lies above the stack");
    items->assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return Status::Ok();
  }
  Status PopN(size_t n, std::vector<uint32_t>* items) {
    if (stack_.size() < n + MarkFloor())
      return Corrupt("expects " + std::to_string(n) + " value(s) on the stack");
    items->assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return Status::Ok();
  }
  size_t MarkFloor() const { return marks_.empty() ? 0 : marks_.back(); }

  // The container (list or dict) below the values being added.
  Status AddTo(Kind want, const std::vector<uint32_t>& items) {
    if (stack_.size() <= MarkFloor())
      return Corrupt("no " + std::string(KindName(want)) + " to add to");
    Value& target = doc_.mutable_at(stack_.back());
    if (target.kind != want)
      return Corrupt("adds to a " + std::string(KindName(target.kind)) + ", expected a " +
                     KindName(want));
    if (want == Kind::kDict && items.size() % 2 != 0)
      return Corrupt("an odd number of keys and values for a dict");
    target.items.insert(target.items.end(), items.begin(), items.end());
    return Status::Ok();
  }

  Status Memoize(uint64_t index) {
    if (stack_.size() <= MarkFloor()) return Corrupt("nothing on the stack to memoize");
    memo_[index] = stack_.back();
    return Status::Ok();
  }
  Status Recall(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end())
      return Corrupt("memo entry " + std::to_string(index) + " was never stored");
    stack_.push_back(it->second);
    return Status::Ok();
  }

  Status Step(uint8_t op) {
    std::vector<uint32_t> items;
    uint64_t u = 0;
    std::string_view raw;
    switch (op) {
      case 0x80:  // PROTO
        if (!TakeLe(1, &u)) return Truncated(1);
        if (u < 2 || u > 5)
          return Unsupported("pickle protocol " + std::to_string(u) + "; read are 2 to 5");
        return Status::Ok();
      case 0x95:  // FRAME: a length hint only
        return TakeLe(8, &u) ? Status::Ok() : Truncated(8);
      case '(':
        marks_.push_back(stack_.size());
        return Status::Ok();
      case 'N':
        return Push(Value{});
      case 0x88:
      case 0x89: {
        Value v;
        v.kind = Kind::kBool;
        v.i = op == 0x88;
        return Push(std::move(v));
      }
      case 'J':
        if (!TakeLe(4, &u)) return Truncated(4);
        return PushInt(static_cast<int32_t>(static_cast<uint32_t>(u)));
      case 'K':
        if (!TakeLe(1, &u)) return Truncated(1);
        return PushInt(static_cast<int64_t>(u));
      case 'M':
        if (!TakeLe(2, &u)) return Truncated(2);
        return PushInt(static_cast<int64_t>(u));
      case 0x8a:
        return PushLong(1);
      case 0x8b:
        return PushLong(4);
      case 'G': {  // BINFLOAT: big-endian IEEE double
        if (!Take(8, &raw)) return Truncated(8);
        uint64_t bits = 0;
        for (char c : raw) bits = (bits << 8) | static_cast<uint8_t>(c);
        Value v;
        v.kind = Kind::kFloat;
        std::memcpy(&v.f, &bits, sizeof v.f);
        return Push(std::move(v));
      }
      case 'X':
        return PushText(Kind::kStr, 4);
      case 0x8c:
        return PushText(Kind::kStr, 1);
      case 0x8d:
        return PushText(Kind::kStr, 8);
      case 'T':
        return PushText(Kind::kBytes, 4);  // BINSTRING (py2 str)
      case 'U':
        return PushText(Kind::kBytes, 1);
      case 'B':
        return PushText(Kind::kBytes, 4);
      case 'C':
        return PushText(Kind::kBytes, 1);
      case 0x8e:
        return PushText(Kind::kBytes, 8);
      case ']':
        return PushContainer(Kind::kList, {});
      case '}':
        return PushContainer(Kind::kDict, {});
      case ')':
        return PushContainer(Kind::kTuple, {});
      case 'l':
        NCCLRR_RETURN_IF_ERROR(PopMark(&items));
        return PushContainer(Kind::kList, std::move(items));
      case 't':
        NCCLRR_RETURN_IF_ERROR(PopMark(&items));
        return PushContainer(Kind::kTuple, std::move(items));
      case 'd':
        NCCLRR_RETURN_IF_ERROR(PopMark(&items));
        if (items.size() % 2 != 0) return Corrupt("an odd number of keys and values for a dict");
        return PushContainer(Kind::kDict, std::move(items));
      case 0x85:
      case 0x86:
      case 0x87:
        NCCLRR_RETURN_IF_ERROR(PopN(op - 0x84u, &items));
        return PushContainer(Kind::kTuple, std::move(items));
      case 'a':
        NCCLRR_RETURN_IF_ERROR(PopN(1, &items));
        return AddTo(Kind::kList, items);
      case 'e':
        NCCLRR_RETURN_IF_ERROR(PopMark(&items));
        return AddTo(Kind::kList, items);
      case 's':
        NCCLRR_RETURN_IF_ERROR(PopN(2, &items));
        return AddTo(Kind::kDict, items);
      case 'u':
        NCCLRR_RETURN_IF_ERROR(PopMark(&items));
        return AddTo(Kind::kDict, items);
      case '0':
        return PopN(1, &items);
      case '1':
        return PopMark(&items);
      case '2':
        if (stack_.size() <= MarkFloor()) return Corrupt("nothing on the stack to duplicate");
        stack_.push_back(stack_.back());
        return Status::Ok();
      case 'q':
        if (!TakeLe(1, &u)) return Truncated(1);
        return Memoize(u);
      case 'r':
        if (!TakeLe(4, &u)) return Truncated(4);
        return Memoize(u);
      case 0x94:
        return Memoize(memo_.size());
      case 'h':
        if (!TakeLe(1, &u)) return Truncated(1);
        return Recall(u);
      case 'j':
        if (!TakeLe(4, &u)) return Truncated(4);
        return Recall(u);
      default:
        return Unsupported(
            "not an opcode of plain data (a Flight Recorder dump holds only dicts, lists, tuples, "
            "strings, numbers, None and booleans, pickled with protocol 2-5)");
    }
  }

  std::string_view b_;
  size_t pos_ = 0;
  Document doc_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

}  // namespace

StatusOr<Document> ParsePickle(std::string_view bytes) { return PickleMachine(bytes).Run(); }

}  // namespace ncclrr::py
