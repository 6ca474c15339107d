#include "executor.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "run_state.h"
#include "stuck.h"

namespace ncclrr::replay {

std::vector<uint64_t> ReplayPositions(const ReplayPlan& plan, const IssueOrder& order) {
  std::vector<uint64_t> pos(plan.calls.size(), 0);
  std::map<std::tuple<uint32_t, int, int, int>, uint64_t> next;  // (comm, rank, peer, api)
  for (const auto& units : order.units_of_actor)
    for (uint32_t u : units)
      for (uint32_t idx : plan.units[u].calls) {
        const PlanCall& c = plan.calls[idx];
        const bool coll = c.collective();
        pos[idx] =
            next[{c.comm, c.rank, coll ? -1 : c.root_peer, coll ? 0 : static_cast<int>(c.api)}]++;
      }
  return pos;
}

namespace {

void Report(const ExecOptions& o, const RunState& st, uint64_t total) {
  if (!o.progress) return;
  o.progress(fmt::format("{}: {}/{} calls issued, {} done", o.label, st.issued_calls.load(), total,
                         st.done_calls.load()));
}

}  // namespace

ExecResult Execute(const ReplayPlan& plan, Backend& backend, const DataSource& data,
                   const IssueOrder& order, const ExecOptions& options) {
  ExecResult result;
  const int64_t t_setup = SteadyNs();
  // Shared with the actor threads; kept alive if a thread has to be left behind (below).
  auto st = std::make_shared<RunState>(plan, backend, data, order, options);
  st->positions = ReplayPositions(plan, order);
  st->outcomes.resize(plan.calls.size());
  st->actors.resize(plan.actors.size());
  st->ids = options.ids;
  st->ids.resize(plan.comms.size());
  for (size_t ci = 0; ci < plan.comms.size() && options.ids.empty(); ++ci) {
    if (!plan.comms[ci].used) continue;
    const ncclResult_t r = backend.nccl().GetUniqueId(&st->ids[ci]);
    if (r != ncclSuccess) {
      result.error = "ncclGetUniqueId: " + backend.nccl().ErrorText(r, nullptr);
      return result;
    }
  }
  std::vector<uint32_t> run = options.run_actors;
  if (run.empty())
    for (uint32_t a = 0; a < plan.actors.size(); ++a) run.push_back(a);
  const int actors = static_cast<int>(run.size());
  st->running = actors;
  st->references = std::make_unique<SharedReferences>(run.size() == plan.actors.size());
  std::vector<std::thread> threads;
  for (uint32_t a : run) threads.emplace_back([st, a] { RunActor(*st, a); });

  const int64_t timeout_ns = static_cast<int64_t>(options.timeout_s * 1e9);
  int64_t start_ns = 0, last_move_ns = SteadyNs(), last_report_ns = SteadyNs(), abort_ns = 0;
  uint64_t last_progress = ~uint64_t{0};
  bool left_behind = false;
  while (st->exited.load() < actors) {
    usleep(2000);
    const int64_t now = SteadyNs();
    if (!st->go.load() && st->ready.load() == actors) {
      start_ns = SteadyNs();
      result.setup_seconds = static_cast<double>(start_ns - t_setup) * 1e-9;
      st->go.store(true);
    }
    if (const uint64_t p = st->progress.load(); p != last_progress) {
      last_progress = p;
      last_move_ns = now;
    } else if (!st->abort.load() && now - last_move_ns > timeout_ns) {
      st->hang.store(true);
      st->abort.store(true);
    }
    if (st->abort.load() && abort_ns == 0) abort_ns = now;
    // A backend that does not return after its communicators were aborted must not hang the
    // replay: its threads are left behind (they hold `st`), and the replay reports an error.
    if (abort_ns && now - abort_ns > timeout_ns + 30'000'000'000) {
      left_behind = true;
      break;
    }
    if (now - last_report_ns > 1'000'000'000) {
      last_report_ns = now;
      Report(options, *st, plan.calls.size());
    }
  }
  for (std::thread& t : threads) {
    if (left_behind)
      t.detach();
    else
      t.join();
  }
  if (left_behind) {
    result.error = "the backend did not return within " +
                   std::to_string(static_cast<int>(options.timeout_s) + 30) +
                   " s after its communicators were aborted";
    result.hang = true;
    return result;
  }
  result.hang = st->hang.load();
  result.error = st->first_error();
  if (result.hang) result.error.clear();  // errors after an abort are its consequences
  if (start_ns && st->last_done_ns.load() > start_ns)
    result.seconds = static_cast<double>(st->last_done_ns.load() - start_ns) * 1e-9;
  result.calls = std::move(st->outcomes);
  for (size_t i = 0; i < result.calls.size(); ++i) result.calls[i].position = st->positions[i];
  result.actors = st->actors;
  if (result.hang || !result.error.empty())
    result.stuck = ExplainStuck(plan, order, st->positions, st->actors);
  return result;
}

}  // namespace ncclrr::replay
