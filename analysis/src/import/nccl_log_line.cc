#include "import/nccl_log_line.h"

#include <cctype>
#include <charconv>
#include <vector>

namespace ncclrr::nccl_log {
namespace {

constexpr std::string_view kInfo = "NCCL INFO";

// A number that does not parse makes the field absent; one that overflows marks the line.
struct NumberReader {
  bool out_of_range = false;

  template <typename T>
  bool Read(std::string_view s, int base, T* out) {
    if (base == 16 && (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0)) s.remove_prefix(2);
    if (s.empty()) return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
    if (ec == std::errc::result_out_of_range) out_of_range = true;
    return ec == std::errc() && end == s.data() + s.size();
  }
  bool Pointer(std::string_view s, uint64_t* out) {
    if (s == "(nil)" || s == "nil" || s == "0") {
      *out = 0;
      return true;
    }
    return Read(s, 16, out);
  }
};

std::vector<std::string_view> Tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    const size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\r') ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "host:pid:tid [dev] " just before "NCCL INFO", with anything in front of host.
void ReadPrefix(std::string_view prefix, ParsedLine* p, NumberReader* num) {
  auto toks = Tokens(prefix);
  if (toks.size() < 2) return;
  std::string_view dev = toks.back();
  std::string_view who = toks[toks.size() - 2];
  if (dev.size() < 3 || dev.front() != '[' || dev.back() != ']') return;
  dev = dev.substr(1, dev.size() - 2);
  const size_t c2 = who.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return;
  const size_t c1 = who.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c1 == 0) return;
  std::string_view host = who.substr(0, c1);
  // A launcher tag glued to the host ("[rank3]:gpu0", "[1,0]<stdout>:gpu0"): the host is the
  // longest tail of characters a hostname can hold.
  size_t start = host.size();
  while (start > 0 && (std::isalnum(static_cast<unsigned char>(host[start - 1])) ||
                       host[start - 1] == '.' || host[start - 1] == '-' || host[start - 1] == '_'))
    --start;
  host.remove_prefix(start);
  const std::string_view pid = who.substr(c1 + 1, c2 - c1 - 1);
  const std::string_view tid = who.substr(c2 + 1);
  if (host.empty() || !AllDigits(pid) || !AllDigits(tid) || !AllDigits(dev)) return;
  if (!num->Read(pid, 10, &p->pid) || !num->Read(tid, 10, &p->tid) || !num->Read(dev, 10, &p->dev))
    return;
  p->host = std::string(host);
  p->has_process = true;
}

// torchrun's "[rank3]:" in front of a line: the global rank of the process.
int LauncherRank(std::string_view prefix) {
  const size_t at = prefix.find("[rank");
  if (at == std::string_view::npos) return -1;
  const size_t end = prefix.find(']', at);
  if (end == std::string_view::npos) return -1;
  const std::string_view digits = prefix.substr(at + 5, end - at - 5);
  int r = -1;
  if (!AllDigits(digits) || digits.size() > 7) return -1;
  std::from_chars(digits.data(), digits.data() + digits.size(), r);
  return r;
}

bool ReadColl(const std::vector<std::string_view>& t, CollFields* c, NumberReader* num) {
  size_t i = 0;
  while (i + 1 < t.size() && !(t[i].size() > 1 && t[i].back() == ':' && t[i + 1] == "opCount")) ++i;
  if (i + 1 >= t.size()) return false;
  c->op = std::string(t[i].substr(0, t[i].size() - 1));
  if (c->op.rfind("nccl", 0) == 0) c->op = c->op.substr(4);
  bool has_comm = false, has_count = false, has_dtype = false;
  for (size_t k = i + 1; k < t.size(); ++k) {
    const std::string_view key = t[k];
    if (key.rfind("[nranks=", 0) == 0 && key.back() == ']') {
      num->Read(key.substr(8, key.size() - 9), 10, &c->nranks);
      continue;
    }
    if (k + 1 >= t.size()) break;
    const std::string_view v = t[k + 1];
    bool used = true;
    if (key == "opCount")
      c->has_op_count = num->Read(v, 16, &c->op_count);
    else if (key == "sendbuff")
      num->Pointer(v, &c->sendbuff);
    else if (key == "recvbuff")
      num->Pointer(v, &c->recvbuff);
    else if (key == "count")
      has_count = num->Read(v, 10, &c->count);
    else if (key == "datatype")
      has_dtype = num->Read(v, 10, &c->datatype);
    else if (key == "op")
      num->Read(v, 10, &c->redop);
    else if (key == "root")
      num->Read(v, 10, &c->root);
    else if (key == "comm")
      has_comm = num->Pointer(v, &c->comm);
    else if (key == "stream")
      num->Pointer(v, &c->stream);
    else if (key == "globalrank")
      num->Read(v, 10, &c->global_rank);
    else
      used = false;
    if (used) ++k;
  }
  return has_comm && has_count && has_dtype && c->comm != 0;
}

bool ReadInit(const std::vector<std::string_view>& t, InitFields* in, NumberReader* num) {
  size_t i = 0;
  while (i + 1 < t.size() && t[i] != "comm") ++i;
  if (i + 1 >= t.size() || !num->Pointer(t[i + 1], &in->comm) || in->comm == 0) return false;
  if (i > 0 && t[i - 1].rfind("nccl", 0) == 0) in->function = std::string(t[i - 1]);
  for (size_t k = i + 2; k + 1 < t.size(); ++k) {
    const std::string_view key = t[k], v = t[k + 1];
    uint64_t u = 0;
    bool used = true;
    if (key == "rank")
      num->Read(v, 10, &in->rank);
    else if (key == "nranks" || key == "nRanks")
      num->Read(v, 10, &in->nranks);
    else if (key == "cudaDev")
      num->Read(v, 10, &in->cuda_dev);
    else if (key == "commId" && num->Read(v, 16, &u))
      in->comm_id = u;
    else if (key == "parent" && num->Pointer(v, &u))
      in->parent = u;
    else if (key == "splitCount")
      num->Read(v, 10, &in->split_count);
    else if (key == "color")
      num->Read(v, 10, &in->color);
    else if (key == "key")
      num->Read(v, 10, &in->key);
    else
      used = false;
    if (used) ++k;
  }
  return in->rank >= 0 && in->nranks > 0 && in->rank < in->nranks;
}

}  // namespace

ParsedLine ParseLine(std::string_view line) {
  ParsedLine p;
  NumberReader num;
  std::string_view body = line;
  const size_t at = line.rfind(kInfo);
  if (at != std::string_view::npos) {
    const std::string_view prefix = line.substr(0, at);
    body = line.substr(at + kInfo.size());
    ReadPrefix(prefix, &p, &num);
    p.launcher_rank = LauncherRank(prefix);
    p.kind = LineKind::kOther;
  } else if (line.find("opCount") == std::string_view::npos) {
    return p;  // not NCCL's: a prefix-less COLL line is the only other thing worth reading
  }
  const auto toks = Tokens(body);
  if (ReadColl(toks, &p.coll, &num))
    p.kind = LineKind::kColl;
  else if (at != std::string_view::npos && ReadInit(toks, &p.init, &num))
    p.kind = LineKind::kInit;
  if (num.out_of_range) {
    p.out_of_range = true;
    p.kind = at != std::string_view::npos ? LineKind::kOther : LineKind::kNotNccl;
  }
  return p;
}

}  // namespace ncclrr::nccl_log
