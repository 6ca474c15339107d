#include "ncclrr/replay/replayer.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "backend.h"
#include "child_processes.h"
#include "data.h"
#include "executor.h"
#include "explain.h"
#include "gpu_sharing.h"
#include "mpi.h"
#include "ncclrr/base/memory_use.h"
#include "order.h"
#include "plan.h"
#include "replay_env.h"

namespace ncclrr::replay {
namespace {

uint64_t TrialSeed(uint64_t seed, int trial) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(trial) + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// nccl-tests' bus bytes of one call (size x bus factor), so bandwidths compare with theirs.
double BusBytes(const PlanCall& c, int n) {
  const double size = static_cast<double>(c.count * DtypeSize(c.dtype));
  const double f = n > 1 ? static_cast<double>(n - 1) / n : 1.0;
  switch (c.api) {
    case Api::kAllReduce:
      return size * (n > 1 ? 2 * f : 1.0);
    case Api::kAllGather:
    case Api::kReduceScatter:
    case Api::kAlltoAll:
    case Api::kGather:
    case Api::kScatter:
      return size * n * f;
    default:
      return size;
  }
}

class Replayer {
 public:
  // `group`: this process's part of a one-process-per-rank replay (a child's link); `mpi` when it
  // runs under mpirun; neither: this process replays every rank, or starts a child per rank.
  Replayer(const analysis::TraceModel& model, const ReplayOptions& options, ProcessGroup* group,
           MpiWorld* mpi)
      : model_(model), opt_(options), group_(mpi ? mpi : group), mpi_(mpi) {}

  StatusOr<ReplayReport> Run() {
    auto plan = BuildPlan(model_);
    if (!plan.ok()) return plan.status();
    plan_ = std::move(*plan);
    NCCLRR_RETURN_IF_ERROR(Prepare());
    for (const OrderSpec& spec : opt_.orders) {
      switch (spec.kind) {
        case OrderSpec::Kind::kRecorded:
          report_.results.push_back(RunOne("recorded", RecordedOrder(plan_)));
          break;
        case OrderSpec::Kind::kCanonical:
          report_.results.push_back(RunOne("canonical", CanonicalOrder(plan_)));
          break;
        case OrderSpec::Kind::kFile:
          report_.results.push_back(RunOne(spec.Label(), file_orders_.at(spec.file)));
          break;
        case OrderSpec::Kind::kPermute:
          Permute(spec);
          break;
      }
    }
    return std::move(report_);
  }

 private:
  Status Prepare() {
    // Order files first: a malformed one fails the replay before anything runs.
    for (const OrderSpec& spec : opt_.orders)
      if (spec.kind == OrderSpec::Kind::kFile && !file_orders_.count(spec.file)) {
        auto o = OrderFromFile(plan_, spec.file);
        if (!o.ok()) return o.status();
        file_orders_.emplace(spec.file, std::move(*o));
      }
    BackendConfig cfg;
    cfg.kind = opt_.backend;
    cfg.timeout_s = opt_.timeout_s;
    cfg.library = opt_.backend == BackendKind::kHost ? opt_.host_library : opt_.nccl_library;
    if (!model_.dir().files.empty())
      for (const auto& [k, v] : model_.dir().files.front().header.env)
        cfg.recorded_env.push_back({k, v});
    auto backend = opt_.backend == BackendKind::kHost ? MakeHostBackend(cfg) : MakeNcclBackend(cfg);
    if (!backend.ok()) return backend.status();
    backend_ = std::move(*backend);
    NCCLRR_RETURN_IF_ERROR(PlaceRanks());
    auto data = DataSource::Create(plan_, opt_.data, opt_.seed);
    if (!data.ok()) return data.status();
    data_ = std::move(*data);

    report_.trace = model_.dir().dir;
    report_.options = opt_;
    report_.options.progress = nullptr;
    report_.recorded_nccl_version = plan_.recorded_nccl_version;
    report_.replay_nccl_version = backend_->nccl().version;
    report_.ranks = plan_.actors.size();
    for (const PlanComm& pc : plan_.comms) report_.comms += pc.used;
    report_.calls = plan_.calls.size();
    report_.left_out_calls = plan_.left_out_calls;
    report_.include_timing = Env().timing;
    if (opt_.backend == BackendKind::kNccl) report_.warnings.push_back(backend_->Describe());
    const int rec = plan_.recorded_nccl_version, now = backend_->nccl().version;
    if (opt_.backend == BackendKind::kNccl && rec && now && rec / 100 != now / 100)
      report_.warnings.push_back("recorded with NCCL " + NcclVersionString(rec) +
                                 ", replayed with NCCL " + NcclVersionString(now) +
                                 ": algorithms, protocols and communicator hashes may differ");
    for (const std::vector<std::string>* list :
         {&std::as_const(plan_.notes), &data_->notes(), &backend_->notes()})
      report_.warnings.insert(report_.warnings.end(), list->begin(), list->end());
    budget_ = opt_.memory_budget_bytes ? opt_.memory_budget_bytes : Env().memory_budget;
    if (budget_ == 0) budget_ = DefaultBudget();
    if (group_ == nullptr && spawn_) return StartChildren();
    if (mpi_ != nullptr) {
      NCCLRR_RETURN_IF_ERROR(CheckMemoryFits(plan_, placement_, budget_));
      report_.mode = "one process per rank under mpirun (" + std::to_string(mpi_->size()) +
                     " processes); on MPI rank 0's host: " + placement_.Describe() +
                     MemoryText(mpi_->memory_budget(budget_));
    }
    return Status::Ok();
  }

  // Buffer memory for calls in flight when NCCLRR_REPLAY_MEMORY_MB does not say: per GPU on
  // NCCL. On the host, per actor, 1 GiB, but where one process replays every rank all their
  // arenas are this machine's memory: no more than a quarter of what it has available, shared
  // (64 ranks took 19 GB at 1 GiB each). A smaller arena only makes a rank wait for its oldest
  // calls sooner; a call larger than it still gets its own room.
  uint64_t DefaultBudget() const {
    if (opt_.backend != BackendKind::kHost) return 8ull << 30;
    const uint64_t per_actor = 1ull << 30;
    if (group_ != nullptr || mpi_ != nullptr || spawn_) return per_actor;
    const uint64_t available = AvailableMemoryBytes();
    if (available == 0) return per_actor;
    const uint64_t share = available / 4 / std::max<uint64_t>(plan_.actors.size(), 1);
    return std::clamp<uint64_t>(share, 16ull << 20, per_actor);
  }

  // One process replays every rank (a thread each), or one process per rank: under mpirun, as
  // asked (--processes), or because the trace has more ranks than this machine has GPUs.
  Status PlaceRanks() {
    const int actors = static_cast<int>(plan_.actors.size());
    const bool nccl = opt_.backend == BackendKind::kNccl;
    const int gpus = nccl ? backend_->MaxActors() : 0;
    if (mpi_ != nullptr) {
      if (actors != mpi_->size())
        return InvalidArgument("--mpi: the trace has " + std::to_string(actors) +
                               " ranks to replay (one per recorded process and device), so run "
                               "it with mpirun -np " +
                               std::to_string(actors) + " (this job has " +
                               std::to_string(mpi_->size()) + " processes)");
      placement_ = mpi_->Place(gpus, backend_->nccl().version);
      return Status::Ok();
    }
    if (group_ != nullptr) return Status::Ok();  // a child: the parent placed it
    spawn_ = opt_.processes || (nccl && actors > gpus);
    if (!spawn_) {
      report_.mode =
          std::string("one process, a thread per rank") + (nccl ? ", one GPU per rank" : "");
      return Status::Ok();
    }
    if (opt_.command_line.empty())
      return InvalidArgument(
          "--backend nccl: the trace has " + std::to_string(actors) +
          " ranks to replay but this machine has " + std::to_string(gpus) +
          " GPU(s); replaying them as one process per rank needs the replay's command line "
          "(`ncclrr replay` sets it; library callers set ReplayOptions::command_line)");
    placement_ = PlaceOnGpus(actors, gpus, backend_->nccl().version);
    return Status::Ok();
  }

  Status StartChildren() {
    NCCLRR_RETURN_IF_ERROR(CheckMemoryFits(plan_, placement_, budget_));
    auto children =
        ChildProcesses::Start(opt_.command_line, placement_, budget_, 2 * opt_.timeout_s + 30);
    if (!children.ok()) return children.status();
    children_ = std::move(*children);
    group_ = children_.get();
    const uint64_t per_rank = budget_ / static_cast<uint64_t>(placement_.MaxPerGpu());
    report_.mode = "one process per rank: " + placement_.Describe() +
                   (opt_.backend == BackendKind::kNccl ? MemoryText(per_rank) : "");
    return Status::Ok();
  }

  std::string MemoryText(uint64_t per_rank) const {
    if (opt_.backend != BackendKind::kNccl || placement_.sharing == GpuSharing::kNone) return "";
    return "; replay memory " + std::to_string(per_rank >> 20) + " MiB per rank (" +
           std::to_string(budget_ >> 20) + " MiB per GPU, NCCLRR_REPLAY_MEMORY_MB, shared by " +
           "its ranks)";
  }

  void Permute(const OrderSpec& spec) {
    if (!permuter_) permuter_ = std::make_unique<Permuter>(plan_);
    std::map<std::vector<std::vector<uint32_t>>, size_t> seen;  // order -> result index
    const int trials = permuter_->any_freedom() ? spec.trials : 1;
    for (int t = 0; t < trials; ++t) {
      const uint64_t seed = TrialSeed(opt_.seed, t);
      IssueOrder order = permuter_->Trial(seed);
      OrderResult r;
      if (auto it = seen.find(order.units_of_actor); it != seen.end()) {
        r = report_.results[it->second];  // the same reordering: the same verdict
      } else {
        r = RunOne(spec.Label(), order);
        seen.emplace(order.units_of_actor, report_.results.size());
        if (r.outcome != Outcome::kRight && r.moved_calls) r.order_json = OrderToJson(plan_, order);
      }
      r.order = spec.Label();
      r.trial = t;
      r.trial_seed = seed;
      if (!permuter_->any_freedom())
        r.explanation.insert(r.explanation.begin(),
                             "the trace shows no unordered calls (one thread and stream per "
                             "rank, the same order in every step): the only order is the recorded "
                             "one");
      report_.results.push_back(std::move(r));
    }
  }

  OrderResult RunOne(const std::string& label, const IssueOrder& order) {
    if (opt_.progress)
      opt_.progress(label + " order: replaying " + std::to_string(plan_.calls.size()) +
                    " calls of " + std::to_string(plan_.actors.size()) + " rank(s)");
    ExecOptions eo;
    eo.verify = opt_.verify;
    eo.timeout_s = opt_.timeout_s;
    eo.memory_budget = group_ ? group_->memory_budget(budget_) : budget_;
    eo.warmup = opt_.backend == BackendKind::kNccl;
    eo.label = label + " order";
    eo.progress = opt_.progress;
    const ExecResult ex = group_ ? ExecuteInGroup(*group_, plan_, *backend_, *data_, order, eo)
                                 : Execute(plan_, *backend_, *data_, order, eo);
    OrderResult r;
    r.order = label;
    r.moved_calls = order.moved_calls;
    r.seconds = ex.seconds;
    r.setup_seconds = ex.setup_seconds;
    std::vector<uint64_t> positions(plan_.calls.size());
    std::set<uint32_t> wrong_steps;
    for (uint32_t i = 0; i < plan_.calls.size(); ++i) {
      const PlanCall& c = plan_.calls[i];
      const CallOutcome& o = ex.calls.empty() ? CallOutcome{} : ex.calls[i];
      positions[i] = o.position;
      if (!o.issued) continue;
      ++r.calls;
      if (c.rank == 0) r.bus_bytes += BusBytes(c, plan_.comms[c.comm].nranks);
      if (o.check.checked) ++r.checked_calls;
      if (o.check.reproduced == 1) ++r.reproduced_calls;
      if (o.check.reproduced == 0) ++r.unreproduced_calls;
      if (o.check.wrong == 0) continue;
      ++r.wrong_calls;
      r.wrong_elements += o.check.wrong;
      if (const uint32_t step = StepOf(plan_, c); step != kNone) wrong_steps.insert(step);
      WrongCall w;
      w.comm_id = plan_.comms[c.comm].id;
      w.comm_name = plan_.comms[c.comm].name;
      w.seq = o.position;
      w.rank = c.rank;
      w.call = DescribeCall(plan_, c);
      w.logical = DescribeLogical(plan_, c);
      w.wrong_elements = o.check.wrong;
      w.checked_elements = o.check.checked;
      w.first_wrong = o.check.first_wrong;
      w.got = o.check.got;
      w.expected = o.check.expected;
      w.args_differ = c.collective() && plan_.comms[c.comm].logical[c.logical].args_differ;
      r.wrong.push_back(w);
    }
    std::stable_sort(r.wrong.begin(), r.wrong.end(), [](const WrongCall& a, const WrongCall& b) {
      return std::tie(a.comm_id, a.seq, a.rank) < std::tie(b.comm_id, b.seq, b.rank);
    });
    if (r.reproduced_calls + r.unreproduced_calls > 0) r.reproduced = r.unreproduced_calls == 0;
    r.stuck = ex.stuck;
    for (const StuckCall& s : r.stuck)
      for (uint32_t i = 0; i < plan_.calls.size(); ++i) {
        const PlanCall& c = plan_.calls[i];
        if (c.collective() && plan_.comms[c.comm].id == s.comm_id && c.rank == s.rank &&
            positions[i] == s.seq)
          if (const uint32_t step = StepOf(plan_, c); step != kNone) wrong_steps.insert(step);
      }
    r.steps = plan_.steps;
    r.wrong_steps = wrong_steps.size();
    r.wrong_step_list.assign(wrong_steps.begin(), wrong_steps.end());
    if (!ex.error.empty()) {
      r.outcome = Outcome::kError;
      r.error = ex.error;
    } else if (ex.hang) {
      r.outcome = Outcome::kHang;
    } else {
      r.outcome = r.wrong_calls ? Outcome::kWrong : Outcome::kRight;
    }
    if (r.outcome != Outcome::kError) r.explanation = ExplainOrder(plan_, order, positions);
    if (opt_.progress) {
      const std::string line = label + " order: " + OutcomeName(r.outcome) + " (" +
                               std::to_string(r.wrong_calls) + " wrong calls, " +
                               std::to_string(ex.seconds) + " s)";
      opt_.progress(line);
    }
    return r;
  }

  const analysis::TraceModel& model_;
  const ReplayOptions& opt_;
  ProcessGroup* group_;
  MpiWorld* mpi_;
  bool spawn_ = false;
  GpuPlacement placement_;
  std::unique_ptr<ChildProcesses> children_;
  ReplayPlan plan_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<DataSource> data_;
  std::unique_ptr<Permuter> permuter_;
  std::map<std::string, IssueOrder> file_orders_;
  uint64_t budget_ = 0;
  ReplayReport report_;
};

}  // namespace

StatusOr<ReplayReport> Replay(const analysis::TraceModel& model, const ReplayOptions& options) {
  auto child = ChildLink::FromEnvironment();
  if (!child.ok()) return child.status();
  if (*child) {  // one rank of a parent replay: its report is the parent's to write
    ReplayOptions quiet = options;
    quiet.progress = nullptr;
    auto report = Replayer(model, quiet, child->get(), nullptr).Run();
    if (!report.ok()) return report.status();
    report->secondary_exit_code = report->ExitCode();
    report->secondary = true;
    return report;
  }
  if (!options.mpi) return Replayer(model, options, nullptr, nullptr).Run();
  auto mpi = MpiWorld::Init();
  if (!mpi.ok()) return mpi.status();
  auto report = Replayer(model, options, nullptr, mpi->get()).Run();
  // Every process leaves with rank 0's verdict (an error on one rank is an error for all).
  int code = report.ok() ? report->ExitCode() : 2;
  (void)(*mpi)->Broadcast(&code, sizeof code);
  if (!report.ok()) return report.status();
  if (!(*mpi)->root()) {
    report->secondary = true;
    report->secondary_exit_code = code;
  }
  return report;
}

}  // namespace ncclrr::replay
