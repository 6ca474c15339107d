#pragma once
// CallDetailsModel: every recorded field of one call, as a two-column tree (field, value) with
// sections: the call, what NCCL pairs it with on every rank, the findings that name it, GPU
// times, sketches (the data-check values), the call site's stack frames, its communicator and
// its process (file, clock alignment).
#include <QStandardItemModel>
#include <memory>
#include <optional>

#include "models/trace_session.h"

namespace ncclrr::viewer {

class CallDetailsModel : public QStandardItemModel {
 public:
  explicit CallDetailsModel(QObject* parent = nullptr);
  // Shows `call` of `session`; nullopt clears the model.
  void Show(const std::shared_ptr<const TraceSession>& session, std::optional<CallRef> call);

 private:
  void AddCall(QStandardItem* root, const TraceSession& s, CallRef r);
  void AddPairing(QStandardItem* root, const TraceSession& s, CallRef r);
  void AddFindings(QStandardItem* root, const TraceSession& s, CallRef r);
  void AddGpuAndSketches(QStandardItem* root, const TraceSession& s, CallRef r);
  void AddComm(QStandardItem* root, const TraceSession& s, CallRef r);
  void AddProcess(QStandardItem* root, const TraceSession& s, CallRef r);
};

}  // namespace ncclrr::viewer
