// Outside text made safe for terminals, JSON, XML and markdown (io/text_safety.hpp).
#include "harness/io/text_safety.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace rcts::harness {
namespace {

TEST(TextSafety, ControlsBecomeVisible) {
  EXPECT_EQ(visible_controls("a\x1b[31mb\tc\nd\x7f\x01"), "a\\x1b[31mb\tc\nd\\x7f\\x01");
  EXPECT_EQ(visible_controls("plain \xc3\xa9"), "plain \xc3\xa9");  // UTF-8 passes untouched
}

TEST(TextSafety, InvalidUtf8IsReplaced) {
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(valid_utf8("ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(valid_utf8("bad \xff\xfe"), "bad " + fffd + fffd);
  EXPECT_EQ(valid_utf8("\xc0\xaf"), fffd + fffd);          // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), fffd + fffd + fffd);  // a UTF-16 surrogate
  EXPECT_EQ(valid_utf8("cut \xe2\x82"), "cut " + fffd + fffd);
}

TEST(TextSafety, JsonTextNeverThrowsOnBytes) {
  const nlohmann::json j{{"reason", std::string("bad \xff bytes")}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what json_text is for
  EXPECT_EQ(json_text(j), "{\"reason\":\"bad \xef\xbf\xbd bytes\"}");
}

TEST(TextSafety, StreamBufferEscapesEveryControl) {
  std::ostringstream sink;
  VisibleControlsBuffer buf(sink.rdbuf());
  std::ostream out(&buf);
  out << "red \x1b[31m" << '\x07' << "ok\n" << std::string("x\0y", 3);
  out.flush();
  EXPECT_EQ(sink.str(), "red \\x1b[31m\\x07ok\nx\\x00y");
}

}  // namespace
}  // namespace rcts::harness
