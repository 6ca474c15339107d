#include "ncclrr/analysis/check_group.h"

#include <barrier>

#include "ncclrr/base/mpi_lib.h"

namespace ncclrr::analysis {

Status CheckGroup::AllToAll(const std::vector<std::string>& out, std::vector<std::string>* in) {
  std::string packed, got;
  std::vector<uint64_t> sizes, got_sizes;
  for (const std::string& blob : out) {
    packed += blob;
    sizes.push_back(blob.size());
  }
  NCCLRR_RETURN_IF_ERROR(AllToAllPacked(packed, sizes, &got, &got_sizes));
  in->clear();
  size_t at = 0;
  for (const uint64_t n : got_sizes) {
    in->push_back(got.substr(at, n));
    at += n;
  }
  return Status::Ok();
}

namespace {

// Mailboxes shared by the members of a LocalCheckGroups: box[to][from].
struct LocalExchange {
  explicit LocalExchange(int n)
      : size(n),
        box(static_cast<size_t>(n), std::vector<std::string>(static_cast<size_t>(n))),
        sync(n) {}
  int size;
  std::vector<std::vector<std::string>> box;
  std::barrier<> sync;
};

class LocalMember : public CheckGroup {
 public:
  LocalMember(std::shared_ptr<LocalExchange> x, int rank) : x_(std::move(x)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return x_->size; }
  Status AllToAllPacked(const std::string& out, const std::vector<uint64_t>& out_sizes,
                        std::string* in, std::vector<uint64_t>* in_sizes) override {
    const auto me = static_cast<size_t>(rank_);
    size_t at = 0;
    for (size_t p = 0; p < out_sizes.size(); ++p) {
      x_->box[p][me] = out.substr(at, out_sizes[p]);
      at += out_sizes[p];
    }
    x_->sync.arrive_and_wait();  // every member has posted
    in->clear();
    in_sizes->clear();
    for (std::string& blob : x_->box[me]) {
      *in += blob;
      in_sizes->push_back(blob.size());
      std::string().swap(blob);
    }
    x_->sync.arrive_and_wait();  // every member has taken its mail: the boxes may be reused
    return Status::Ok();
  }

 private:
  std::shared_ptr<LocalExchange> x_;
  int rank_;
};

class MpiMember : public CheckGroup {
 public:
  explicit MpiMember(std::unique_ptr<MpiLib> mpi) : mpi_(std::move(mpi)) {}
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  Status AllToAllPacked(const std::string& out, const std::vector<uint64_t>& out_sizes,
                        std::string* in, std::vector<uint64_t>* in_sizes) override {
    return mpi_->AllToAll(out, out_sizes, in, in_sizes);
  }

 private:
  std::unique_ptr<MpiLib> mpi_;
};

}  // namespace

std::vector<std::unique_ptr<CheckGroup>> LocalCheckGroups(int n) {
  auto x = std::make_shared<LocalExchange>(n);
  std::vector<std::unique_ptr<CheckGroup>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<LocalMember>(x, r));
  return out;
}

StatusOr<std::unique_ptr<CheckGroup>> MpiCheckGroup() {
  auto mpi = MpiLib::Init("check --mpi");
  if (!mpi.ok()) return mpi.status();
  return std::unique_ptr<CheckGroup>(new MpiMember(std::move(mpi.value())));
}

}  // namespace ncclrr::analysis
