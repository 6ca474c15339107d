// `ncclrr-viewer DIR --screenshot FILE [--select-finding N]`: the program itself, as the demo and
// the docs run it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <QImage>
#include <QProcess>

#include <cstdlib>
#include <filesystem>

#include "models/path_text.h"
#include "models/timeline_style.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

QString Viewer() {
  const char* bin = std::getenv("NCCLRR_TEST_BIN");
  return QString(bin ? bin : "build/bin") + "/ncclrr-viewer";
}

struct ViewerRun {
  int rc = -1;
  QString out, err;
};

ViewerRun RunViewer(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  env.insert("XDG_CONFIG_HOME", QString::fromStdString(testing::TempDir("cli-config")));
  p.setProcessEnvironment(env);
  p.start(Viewer(), args);
  EXPECT_TRUE(p.waitForFinished(60000)) << Viewer().toStdString();
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

TEST(ScreenshotCli, WritesThePictureOfASwapWithItsFindingSelected) {
  testing::EnsureApp();
  const std::string dir = testing::WriteSwapTrace("cli-swap");
  const QString png = QString::fromStdString(testing::TempDir("cli-out") + "/swap.png");
  const ViewerRun r = RunViewer({QString::fromStdString(dir), "--screenshot", png,
                                 "--select-finding", "0", "--size", "1400x900"});
  ASSERT_EQ(r.rc, 0) << r.err.toStdString();
  EXPECT_TRUE(r.out.startsWith("wrote " + png)) << r.out.toStdString();
  QImage image(png);
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), QSize(1400, 900));
  EXPECT_GT(testing::CountPixels(image, FindingColor()), 200);  // timeline boxes and table cells
}

TEST(ScreenshotCli, ACleanTraceHasNoRed) {
  testing::EnsureApp();
  const std::string dir = testing::WriteCleanTrace("cli-clean");
  const QString png = QString::fromStdString(testing::TempDir("cli-out-clean") + "/clean.png");
  const ViewerRun r = RunViewer({QString::fromStdString(dir), "--screenshot", png});
  ASSERT_EQ(r.rc, 0) << r.err.toStdString();
  QImage image(png);
  ASSERT_FALSE(image.isNull());
  // Below the menu, filter bar and legend (whose "finding" swatch is red on purpose).
  EXPECT_EQ(
      testing::CountPixels(image, FindingColor(), QRectF(0, 100, image.width(), image.height())),
      0);
  EXPECT_GT(testing::CountPixels(image, StyleColor(BoxStyle::kAllReduce)), 200);
}

TEST(ScreenshotCli, BadInputExitsTwoWithTheDialogText) {
  testing::EnsureApp();
  const QString png = QString::fromStdString(testing::TempDir("cli-bad") + "/x.png");
  ViewerRun r = RunViewer({"/nonexistent/trace", "--screenshot", png});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(r.err.contains("Could not open '/nonexistent/trace'")) << r.err.toStdString();
  r = RunViewer({QString::fromStdString(testing::WriteCleanTrace("cli-nofinding")), "--screenshot",
                 png, "--select-finding", "3"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(r.err.contains("the trace has 0 findings")) << r.err.toStdString();
  r = RunViewer({"--select-finding", "x", "/tmp"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(r.err.contains("--select-finding needs a finding number")) << r.err.toStdString();
  r = RunViewer({"--bogus"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(r.err.contains("unknown flag '--bogus'")) << r.err.toStdString();
  for (const char* bad : {"0", "-5", "many"}) {
    r = RunViewer({"--max-calls", bad, "/tmp"});
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_TRUE(r.err.contains("--max-calls needs a number of calls")) << r.err.toStdString();
  }
}

// A trace of more calls than --max-calls: drawn at levels of detail, its finding still red.
TEST(ScreenshotCli, ATraceTooLargeToHoldIsDrawnWithItsFinding) {
  testing::EnsureApp();
  const std::string dir = testing::WriteSwapTrace("cli-lod");
  const QString png = QString::fromStdString(testing::TempDir("cli-out-lod") + "/lod.png");
  const ViewerRun r =
      RunViewer({QString::fromStdString(dir), "--screenshot", png, "--select-finding", "0",
                 "--max-calls", "8", "--size", "1400x900"});
  ASSERT_EQ(r.rc, 0) << r.err.toStdString();
  EXPECT_TRUE(r.out.contains("1 findings")) << r.out.toStdString();
  QImage image(png);
  ASSERT_FALSE(image.isNull());
  EXPECT_GT(testing::CountPixels(image, FindingColor(), QRectF(0, 100, 1400, 800)), 50);
}

// A trace directory whose name is not UTF-8 (Latin-1 "caf\xe9") opens: the path keeps its bytes
// (models/path_text.h) instead of becoming U+FFFD and "does not exist".
TEST(ScreenshotCli, ANonUtf8PathOpens) {
  testing::EnsureApp();
  const std::string root = testing::TempDir("cli-latin1");
  const std::string dir = root + "/caf\xe9";
  std::filesystem::create_directories(dir);
  for (const auto& e :
       std::filesystem::directory_iterator(testing::WriteCleanTrace("cli-latin1-src")))
    std::filesystem::copy(e.path(), dir + "/" + e.path().filename().string());
  const std::string png = root + "/latin1.png";
  const std::string cmd = "QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME='" + root + "' '" +
                          Viewer().toStdString() + "' '" + dir + "' --screenshot '" + png +
                          "' 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
  EXPECT_FALSE(QImage(QString::fromStdString(png)).isNull());
  // The conversion itself: bytes -> QString -> the same bytes, UTF-8 text unchanged.
  for (const std::string& bytes : {std::string("caf\xe9/x"), std::string("\xff\xfe"),
                                   std::string("caf\xc3\xa9 \xe2\x82\xac"), std::string("a\xc3")})
    EXPECT_EQ(PathToBytes(PathFromBytes(bytes)), bytes);
  EXPECT_EQ(PathFromBytes("caf\xc3\xa9"), QString::fromUtf8("caf\xc3\xa9"));
}

}  // namespace
}  // namespace ncclrr::viewer
