#include "alignment_view.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPainter>
#include <QStyledItemDelegate>
#include <QVBoxLayout>
#include <algorithm>

#include "ncclrr/trace/describe.h"

namespace ncclrr::viewer {
namespace {

// Draws a selected cell with its own colours and a dark frame, so a selected finding's cells
// stay red instead of turning into the selection colour.
class FramedSelectionDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void paint(QPainter* p, const QStyleOptionViewItem& option,
             const QModelIndex& index) const override {
    QStyleOptionViewItem o(option);
    const bool selected = o.state & QStyle::State_Selected;
    o.state &= ~QStyle::State_Selected;
    QStyledItemDelegate::paint(p, o, index);
    if (!selected) return;
    p->save();
    p->setPen(QPen(QColor(0x11, 0x11, 0x11), 2));
    p->setBrush(Qt::NoBrush);
    p->drawRect(QRectF(option.rect).adjusted(1, 1, -1, -1));
    p->restore();
  }
};

}  // namespace

AlignmentView::AlignmentView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* top = new QHBoxLayout();
  top->addWidget(new QLabel("Alignment of communicator"));
  comms_ = new QComboBox(this);
  comms_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  top->addWidget(comms_, 1);
  layout->addLayout(top);
  table_ = new QTableView(this);
  model_ = new AlignmentModel(this);
  table_->setModel(model_);
  // Fixed sizes: sizing columns to contents would visit every row of a million-call trace.
  table_->horizontalHeader()->setDefaultSectionSize(230);
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setWordWrap(false);
  table_->setItemDelegate(new FramedSelectionDelegate(table_));
  layout->addWidget(table_, 1);
  connect(comms_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!updating_) model_->SetComm(i);
  });
  // Ranks share the width when their cells fit in it; otherwise fixed columns and a scroll bar.
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    const int fits = table_->viewport()->width() / table_->horizontalHeader()->defaultSectionSize();
    table_->horizontalHeader()->setSectionResizeMode(model_->columnCount() <= std::max(fits, 2)
                                                         ? QHeaderView::Stretch
                                                         : QHeaderView::Interactive);
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& current) {
            if (updating_) return;
            if (auto call = model_->CallAt(current)) Q_EMIT callSelected(CallKey(*call));
          });
}

void AlignmentView::SetSession(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  updating_ = true;
  model_->SetSession(session_);
  comms_->clear();
  if (session_)
    for (const analysis::CommModel& c : session_->model().comms())
      comms_->addItem(QString("%1%2 \u00b7 %3 ranks \u00b7 %4 collectives")
                          .arg(c.name.empty() ? QString() : QString::fromStdString(c.name) + " ")
                          .arg(QString::fromStdString(Hex64(c.id)))
                          .arg(c.nranks)
                          .arg(c.max_issued()));
  updating_ = false;
  SetComm(session_ && !session_->model().comms().empty() ? 0 : -1);
}

void AlignmentView::SetComm(int comm) {
  updating_ = true;
  comms_->setCurrentIndex(comm);
  model_->SetComm(comm);
  updating_ = false;
}

void AlignmentView::ShowCall(CallRef call, const std::vector<CallRef>& also) {
  if (!session_) return;
  const auto cs = session_->CommSeqOf(call);
  if (!cs || cs->p2p) return;
  if (static_cast<int>(cs->comm) != model_->comm()) SetComm(static_cast<int>(cs->comm));
  updating_ = true;
  QItemSelection selection;
  const QModelIndex cell = model_->IndexOf(cs->seq, cs->rank);
  if (cell.isValid()) selection.select(cell, cell);
  for (CallRef other : also) {
    const auto os = session_->CommSeqOf(other);
    if (!os || os->p2p || os->comm != cs->comm) continue;
    const QModelIndex i = model_->IndexOf(os->seq, os->rank);
    if (i.isValid()) selection.select(i, i);
  }
  table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
  if (cell.isValid()) {
    table_->selectionModel()->setCurrentIndex(cell, QItemSelectionModel::NoUpdate);
    table_->scrollTo(cell, QAbstractItemView::PositionAtCenter);
  }
  updating_ = false;
}

bool AlignmentView::ShowSeq(uint64_t seq) {
  const QModelIndex cell = model_->IndexOf(seq, 0);
  if (!cell.isValid()) return false;
  table_->scrollTo(cell, QAbstractItemView::PositionAtCenter);
  table_->selectionModel()->select(cell,
                                   QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  return true;
}

}  // namespace ncclrr::viewer
