#include "details_view.h"

#include <QHeaderView>

namespace ncclrr::viewer {

DetailsView::DetailsView(QWidget* parent) : QTreeView(parent) {
  model_ = new CallDetailsModel(this);
  setModel(model_);
  setUniformRowHeights(true);
  setWordWrap(false);
  setAlternatingRowColors(true);
  header()->setStretchLastSection(true);
}

void DetailsView::Show(const std::shared_ptr<const TraceSession>& session,
                       std::optional<CallRef> call) {
  model_->Show(session, call);
  expandAll();
  resizeColumnToContents(0);
}

}  // namespace ncclrr::viewer
