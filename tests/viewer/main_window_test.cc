// The real window: traces that cannot be opened give a readable error dialog (never a crash),
// loading happens off the GUI thread, and a finding selects and centres its calls in every view.
#include "main_window.h"

#include <gtest/gtest.h>
#include <QApplication>
#include <QDropEvent>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSignalSpy>
#include <QTableView>
#include <fstream>

#include "scenarios.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

// Opens `path` through the window's background loader; returns the error text ("" on success).
QString OpenAndWait(MainWindow& w, const std::string& path) {
  QSignalSpy loaded(w.loader(), &SessionLoader::loaded);
  QSignalSpy failed(w.loader(), &SessionLoader::failed);
  w.OpenPath(QString::fromStdString(path));
  for (int i = 0; i < 300 && loaded.isEmpty() && failed.isEmpty(); ++i) loaded.wait(100);
  EXPECT_FALSE(loaded.isEmpty() && failed.isEmpty()) << "no answer from the loader";
  QApplication::processEvents();
  return failed.isEmpty() ? QString() : w.last_error();
}

QMessageBox* ErrorDialog(MainWindow& w) { return w.findChild<QMessageBox*>("load-error"); }

TEST(MainWindow, ACorruptTraceGivesAnErrorDialog) {
  testing::EnsureApp();
  const std::string dir = testing::TempDir("corrupt");
  std::ofstream(dir + "/host-1.ncclrr") << "this is not a trace, just some bytes";
  MainWindow w;
  const QString error = OpenAndWait(w, dir);
  ASSERT_FALSE(error.isEmpty());
  EXPECT_TRUE(error.startsWith("Could not open '" + QString::fromStdString(dir) + "'"))
      << error.toStdString();
  EXPECT_TRUE(error.contains("The trace is damaged")) << error.toStdString();
  EXPECT_TRUE(error.contains("ncclrr info")) << error.toStdString();
  QMessageBox* box = ErrorDialog(w);
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->text(), error);
  EXPECT_EQ(box->icon(), QMessageBox::Critical);
  EXPECT_EQ(w.session(), nullptr);
}

TEST(MainWindow, AMissingOrEmptyDirectorySaysWhatToOpen) {
  testing::EnsureApp();
  MainWindow w;
  const QString missing = OpenAndWait(w, "/nonexistent/ncclrr-trace");
  EXPECT_TRUE(missing.contains("/nonexistent/ncclrr-trace")) << missing.toStdString();
  EXPECT_TRUE(missing.contains("ncclrr record -o DIR")) << missing.toStdString();
  const QString empty = OpenAndWait(w, testing::TempDir("empty"));
  EXPECT_TRUE(empty.contains("Nothing to open there")) << empty.toStdString();
  EXPECT_TRUE(empty.contains("no trace files")) << empty.toStdString();
}

TEST(MainWindow, ATornTraceOpensWithItsNote) {
  testing::EnsureApp();
  // The analysis's own torn-file scenario: a rank's last frame is cut.
  const SyntheticScript* torn = nullptr;
  SyntheticScript script;
  for (const auto& sc : ncclrr::testing::GoldenScenarios())
    if (sc.name == "torn_file") {
      script = sc.build();
      torn = &script;
    }
  ASSERT_NE(torn, nullptr);
  const std::string dir = testing::WriteScript("torn", script);
  MainWindow w;
  EXPECT_TRUE(OpenAndWait(w, dir).isEmpty());
  ASSERT_NE(w.session(), nullptr);
  ASSERT_FALSE(w.session()->report().notes.empty());
  EXPECT_EQ(w.session()->report().notes[0].kind, analysis::NoteKind::kTraceIncomplete);
  EXPECT_EQ(ErrorDialog(w), nullptr);
  EXPECT_EQ(w.findings()->model()->rowCount(), 1);  // the notes group
}

TEST(MainWindow, SelectingAFindingCentresItsCallsInBothViews) {
  testing::EnsureApp();
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(OpenAndWait(w, testing::WriteSwapTrace("window-finding")).isEmpty());
  ASSERT_NE(w.session(), nullptr);
  ASSERT_FALSE(w.session()->report().findings.empty());
  ASSERT_TRUE(w.SelectFinding(0));
  QApplication::processEvents();
  const auto calls = w.session()->CallsOfFinding(0);
  ASSERT_FALSE(calls.empty());
  // Timeline: every call of the finding on screen, highlighted, the first one selected.
  const TimelineScene& scene = w.timeline()->scene();
  EXPECT_EQ(scene.highlighted, calls);
  ASSERT_TRUE(scene.selected);
  EXPECT_EQ(*scene.selected, calls.front());
  for (CallRef c : calls) {
    auto rect = CallRect(scene, c);
    ASSERT_TRUE(rect);
    EXPECT_GE(rect->left(), scene.geometry.label_width);
    EXPECT_LE(rect->right(), scene.width);
  }
  // Alignment: the communicator of the call, its cell current and visible.
  const auto cs = w.session()->CommSeqOf(calls.front());
  ASSERT_TRUE(cs);
  EXPECT_EQ(w.alignment()->comm(), static_cast<int>(cs->comm));
  auto* table = w.alignment()->findChild<QTableView*>();
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->currentIndex(), w.alignment()->model()->IndexOf(cs->seq, cs->rank));
  EXPECT_TRUE(table->viewport()->rect().intersects(table->visualRect(table->currentIndex())));
  // Details: the call.
  EXPECT_GT(w.details()->details()->rowCount(), 3);
}

TEST(MainWindow, SelectingACellSelectsTheCallInTheTimeline) {
  testing::EnsureApp();
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  w.SetSession(testing::Load(testing::WriteCleanTrace("window-cell", 2, 3)));
  auto* table = w.alignment()->findChild<QTableView*>();
  const QModelIndex cell = w.alignment()->model()->index(7, 1);
  table->setCurrentIndex(cell);
  QApplication::processEvents();
  const auto call = w.alignment()->model()->CallAt(cell);
  ASSERT_TRUE(call);
  ASSERT_TRUE(w.timeline()->scene().selected);
  EXPECT_EQ(*w.timeline()->scene().selected, *call);
  auto rect = CallRect(w.timeline()->scene(), *call);
  ASSERT_TRUE(rect);
  EXPECT_NEAR(rect->center().x(),
              w.timeline()->scene().geometry.label_width + w.timeline()->axis().width_px / 2, 2);
}

TEST(MainWindow, ADroppedDirectoryOpensAndBecomesRecent) {
  testing::EnsureApp();
  const std::string dir = testing::WriteCleanTrace("dropped");
  MainWindow w;
  QSignalSpy loaded(w.loader(), &SessionLoader::loaded);
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(dir))});
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &drop);
  ASSERT_TRUE(loaded.wait(30000));
  QApplication::processEvents();
  ASSERT_NE(w.session(), nullptr);
  EXPECT_EQ(w.session()->path(), dir);
  // File > Open recent now offers it first.
  QMenu* recent = w.findChild<QMenu*>("recent");
  ASSERT_NE(recent, nullptr);
  ASSERT_FALSE(recent->actions().isEmpty());
  EXPECT_EQ(recent->actions().front()->text(),
            QFileInfo(QString::fromStdString(dir)).absoluteFilePath());
}

}  // namespace
}  // namespace ncclrr::viewer
