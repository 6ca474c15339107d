#include "distributed/call_routing.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>

#include "ncclrr/analysis/model.h"
#include "ncclrr/base/parallel_for.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kPartHeader = 16;

void PadTo8(std::string* s) { s->resize((s->size() + 7) / 8 * 8, '\0'); }

void AppendPart(uint32_t file, const SpillVector<uint32_t>& rows, const CallTable& calls,
                std::string* out) {
  const uint32_t header[2] = {file, 0};
  const uint64_t n = rows.size();
  out->append(reinterpret_cast<const char*>(header), sizeof header);
  out->append(reinterpret_cast<const char*>(&n), sizeof n);
  out->append(reinterpret_cast<const char*>(rows.data()), n * sizeof(uint32_t));
  PadTo8(out);
  calls.Save(out);
  PadTo8(out);
}

}  // namespace

bool RoutedCall(const CallRecord& c) { return c.comm_id != 0 && !UnplaceableCall(c); }

void CallRouter::Encode(TraceDir& d, const std::vector<uint32_t>& files, int threads,
                        std::string* out, std::vector<uint64_t>* sizes) const {
  const auto members = static_cast<size_t>(members_);
  struct Parts {
    FileRows rows;
    std::vector<CallTable> tables;
  };
  std::vector<Parts> parts(files.size());
  ParallelFor(files.size(), threads, [&](size_t i) {
    Parts& p = parts[i];
    p.rows.resize(members);
    p.tables.resize(members);
    Split(files[i], &d.files[files[i]].calls, -1, UINT64_MAX, &p.rows, &p.tables);
  });
  out->clear();
  sizes->assign(members, 0);
  for (size_t m = 0; m < members; ++m) {
    const size_t before = out->size();
    for (size_t i = 0; i < files.size(); ++i)
      if (!parts[i].rows[m].empty())
        AppendPart(files[i], parts[i].rows[m], parts[i].tables[m], out);
    (*sizes)[m] = out->size() - before;
  }
}

void CallRouter::Keep(TraceDir& d, const std::vector<uint32_t>& files, int member,
                      const std::vector<uint64_t>& limit, int threads, FileRows* rows) const {
  const auto m = static_cast<size_t>(member);
  ParallelFor(files.size(), threads, [&](size_t i) {
    const uint32_t f = files[i];
    FileRows r(static_cast<size_t>(members_));
    std::vector<CallTable> t(static_cast<size_t>(members_));
    Split(f, &d.files[f].calls, member, limit[f], &r, &t);
    d.files[f].calls = std::move(t[m]);
    (*rows)[f] = std::move(r[m]);
  });
}

// The members that need the calls of file `f` on comm `id`: its owner, and members checking a
// cross-communicator pair that needs them.
std::vector<int> CallRouter::Dests(uint32_t f, uint64_t id) const {
  std::vector<int> dests{plan_.OwnerOfId(id)};
  if (auto x = plan_.extra.find({f, id}); x != plan_.extra.end())
    for (int m : x->second)
      if (m != dests.front()) dests.push_back(m);
  return dests;
}

void CallRouter::Split(uint32_t f, CallTable* calls, int only, uint64_t limit, FileRows* rows,
                       std::vector<CallTable>* tables) const {
  constexpr size_t kStage = 1024;  // rows gathered per member before they are packed
  std::vector<std::vector<CallRecord>> stage(rows->size());
  auto flush = [&](size_t m) {
    (*tables)[m].Append(stage[m].data(), stage[m].size());
    stage[m].clear();
  };
  std::map<uint64_t, std::vector<int>> dests;  // per comm id, as the file goes
  const auto tail_from = plan_.tail_from.find(f);
  calls->ForEachRow([&](size_t row, const CallRecord& c) {
    if (row >= limit) return;
    if (!RoutedCall(c)) {
      // A failed group end names no communicator: every member gets it, and the one holding
      // its group's calls flags it (TraceModel::flagged_calls).
      if (FailedGroupEnd(c))
        for (size_t m = 0; m < rows->size(); ++m)
          if (only < 0 || static_cast<int>(m) == only) {
            (*rows)[m].push_back(static_cast<uint32_t>(row));
            stage[m].push_back(c);
            if (stage[m].size() == kStage) flush(m);
          }
      return;
    }
    auto it = dests.find(c.comm_id);
    if (it == dests.end()) it = dests.emplace(c.comm_id, Dests(f, c.comm_id)).first;
    const bool tail_to_0 = tail_from != plan_.tail_from.end() && c.enter_ns >= tail_from->second &&
                           TailCollective(c) &&
                           std::find(it->second.begin(), it->second.end(), 0) == it->second.end();
    if (tail_to_0 && (only < 0 || only == 0)) {
      (*rows)[0].push_back(static_cast<uint32_t>(row));
      stage[0].push_back(c);
      if (stage[0].size() == kStage) flush(0);
    }
    for (int dest : it->second) {
      if (only >= 0 && dest != only) continue;
      const auto m = static_cast<size_t>(dest);
      (*rows)[m].push_back(static_cast<uint32_t>(row));
      stage[m].push_back(c);
      if (stage[m].size() == kStage) flush(m);
    }
  });
  for (size_t m = 0; m < stage.size(); ++m) flush(m);
  *calls = CallTable{};
}

bool DecodeCalls(const std::string& in, TraceDir* d, FileRows* rows, uint64_t* held) {
  size_t at = 0;
  while (at < in.size()) {
    if (in.size() - at < kPartHeader) return false;
    uint32_t header[2];
    uint64_t n = 0;
    std::memcpy(header, in.data() + at, sizeof header);
    std::memcpy(&n, in.data() + at + 8, sizeof n);
    const uint32_t f = header[0];
    at += kPartHeader;
    if (f >= d->files.size() || n > (in.size() - at) / sizeof(uint32_t)) return false;
    auto& r = (*rows)[f];
    r.resize(n);
    std::memcpy(r.data(), in.data() + at, n * sizeof(uint32_t));
    at = (at + n * sizeof(uint32_t) + 7) / 8 * 8;
    size_t used = 0;
    CallTable& calls = d->files[f].calls;
    if (at > in.size() || !calls.Load(in.data() + at, in.size() - at, &used) || calls.size() != n)
      return false;
    at = (at + used + 7) / 8 * 8;
    *held += n;
  }
  return true;
}

}  // namespace ncclrr::analysis
