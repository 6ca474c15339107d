// Checkers not written yet: they find nothing. Each moves to its own file when implemented.
#include "checkers.h"

namespace ncclrr::analysis {
namespace {

class PendingChecker : public Checker {
 public:
  explicit PendingChecker(std::string_view n) : name_(n) {}
  std::string_view name() const override { return name_; }
  void Run(CheckContext&, FindingSink&) override {}

 private:
  std::string_view name_;
};

}  // namespace

std::shared_ptr<Checker> MakeSequenceChecker() {
  return std::make_shared<PendingChecker>("sequence");
}
std::shared_ptr<Checker> MakeMissingCallChecker() {
  return std::make_shared<PendingChecker>("missing");
}
std::shared_ptr<Checker> MakeP2pChecker() { return std::make_shared<PendingChecker>("p2p"); }
std::shared_ptr<Checker> MakeCrossCommChecker() {
  return std::make_shared<PendingChecker>("cross");
}
std::shared_ptr<Checker> MakeGraphChecker() { return std::make_shared<PendingChecker>("graph"); }
std::shared_ptr<Checker> MakeLifecycleChecker() {
  return std::make_shared<PendingChecker>("lifecycle");
}
std::shared_ptr<Checker> MakeNcclErrorChecker() { return std::make_shared<PendingChecker>("nccl"); }

}  // namespace ncclrr::analysis
