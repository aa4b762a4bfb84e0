// The strict JSON parser every rcts input goes through: depth limit, duplicate keys,
// numbers beyond a double, invalid UTF-8 and syntax errors all end in an rcts::Error
// naming the source, the JSON path and the value; files that are not JSON files
// (missing, directories, too large) too. Also the case loader on hostile files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness/cases/case.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/config/limits.hpp"
#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;
using testing::ScratchDir;

// The rcts::Error message of parsing `text` (fails the test when it parses).
std::string error_of(const std::string& text) {
  try {
    parse_json_text(text, "in.json");
  } catch (const Error& e) {
    return e.message();
  }
  ADD_FAILURE() << "parsed without error: " << text.substr(0, 200);
  return "";
}

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }
std::string nested_objects(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"a\": ";
  return s + "1" + std::string(depth, '}');
}

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

TEST(StrictJson, ParsesWhatNlohmannParses) {
  const std::string text = R"({"a": [1, -2, 2.5, "x", null, true, {"b": {}}], "c": 18446744073709551615})";
  EXPECT_EQ(parse_json_text(text, "in.json"), json::parse(text));
}

TEST(StrictJson, NestingUpToTheLimitIsAccepted) {
  EXPECT_NO_THROW(parse_json_text(nested_arrays(limits::kMaxJsonDepth), "in.json"));
  EXPECT_NO_THROW(parse_json_text(nested_objects(limits::kMaxJsonDepth), "in.json"));
}

TEST(StrictJson, NestingBeyondTheLimitNamesThePath) {
  std::string path;
  for (int i = 0; i < limits::kMaxJsonDepth; ++i) path += "/0";
  EXPECT_EQ(error_of(nested_arrays(limits::kMaxJsonDepth + 1)),
            "in.json: " + path + " = [...: nested deeper than 64 levels (the limit for rcts input)");
  const std::string obj = error_of(R"({"config": {"model": )" + nested_objects(100) + "}}");
  EXPECT_EQ(obj.rfind("in.json: /config/model/a/a/a/", 0), 0u) << obj;
  EXPECT_NE(obj.find(" = {...: nested deeper than 64 levels"), std::string::npos) << obj;
}

// 100k levels overflowed the stack when such a value was copied or printed.
TEST(StrictJson, VeryDeepDocumentsAreRejectedNotBuilt) {
  EXPECT_NE(error_of(nested_arrays(100000)).find("nested deeper than 64"), std::string::npos);
  EXPECT_NE(error_of(nested_objects(100000)).find("nested deeper than 64"), std::string::npos);
}

TEST(StrictJson, DuplicateKeysAreRejectedAtTheirPath) {
  EXPECT_EQ(error_of(R"({"id": "a", "id": "b"})"),
            "in.json: /id: duplicate key \"id\" (each key may appear once in an object)");
  EXPECT_EQ(error_of(R"({"a": [{"k": 1}, {"k": 2, "j": 0, "k": 3}]})"),
            "in.json: /a/1/k: duplicate key \"k\" (each key may appear once in an object)");
  // JSON pointer escaping of '/' and '~'.
  EXPECT_EQ(error_of(R"({"a/b~c": 1, "a/b~c": 2})").rfind("in.json: /a~1b~0c: duplicate key", 0), 0u);
  // The same key in sibling objects is fine.
  EXPECT_NO_THROW(parse_json_text(R"([{"k": 1}, {"k": 2}, {"x": {"k": 3}, "k": 4}])", "in.json"));
}

TEST(StrictJson, NumbersBeyondADoubleNameThePathAndValue) {
  EXPECT_EQ(error_of(R"({"x": {"y": [0, 1e800]}})"),
            "in.json: /x/y/1 = 1e800: number out of range of a double (line 1, column 17)");
  EXPECT_EQ(error_of("{\n  \"v\": -1e400\n}"), "in.json: /v = -1e400: number out of range of a double (line 2, column 8)");
}

TEST(StrictJson, InvalidUtf8IsRejectedAndTheMessageStaysPrintable) {
  const std::string msg = error_of("{\"d\": \"ok \xff\xfe\"}");
  EXPECT_EQ(msg.rfind("in.json: /d = '\\xff\\xfe\"}': invalid JSON (line 1, column ", 0), 0u) << msg;
  EXPECT_NE(msg.find("ill-formed UTF-8"), std::string::npos) << msg;
  for (unsigned char ch : msg) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << "unprintable byte in: " << msg;
  EXPECT_NE(error_of(R"({"d": "\ud800"})").find("surrogate"), std::string::npos);
}

TEST(StrictJson, SyntaxErrorsNameThePathAndPosition) {
  const std::string msg = error_of("{\"id\": \"x\",\n \"a\": [1, 2, tru]}");
  EXPECT_EQ(msg.rfind("in.json: /a/2 = 'tru]}': invalid JSON (line 2, column ", 0), 0u) << msg;
  EXPECT_NE(msg.find("invalid literal"), std::string::npos) << msg;
  EXPECT_EQ(error_of("").rfind("in.json: / = (end of text): invalid JSON (line 1, column 1)", 0), 0u);
  // The literal JSON does not have, shown whole.
  EXPECT_EQ(error_of(R"({"p": NaN})").rfind("in.json: /p = 'NaN}': invalid JSON (line 1, column ", 0), 0u);
  EXPECT_NE(error_of("{} {}").find("expected end of input"), std::string::npos);
}

TEST(StrictJson, FilesThatAreNotJsonFilesAreNamed) {
  ScratchDir dir;
  auto error = [](const std::filesystem::path& p) {
    try {
      read_json_file(p, "config file");
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(dir.path() / "missing.json"), (dir.path() / "missing.json").string() + ": no such config file");
  EXPECT_EQ(error(dir.path()), dir.path().string() + ": is a directory, not a config file (a JSON file)");
  const auto big = dir.path() / "big.json";
  write(big, "{}");
  std::filesystem::resize_file(big, static_cast<uintmax_t>(limits::kMaxJsonFileBytes) + 1);  // sparse
  EXPECT_NE(error(big).find("more than the 67108864 a config file may have"), std::string::npos) << error(big);
  write(dir.path() / "ok.json", R"({"a": 1})");
  EXPECT_EQ(read_json_file(dir.path() / "ok.json", "config file"), json::parse(R"({"a": 1})"));
}

TEST(CaseFiles, HostileCaseFilesAreErrorsNamingTheFile) {
  ScratchDir dir;
  const auto deep = dir.path() / "deep.json";
  write(deep, R"({"id": "x.deep", "description": "d", "config": {"model": {"num_layers": )" + nested_arrays(100000) +
                  R"(}}, "expect": {"golden": true}})");
  const auto dup = dir.path() / "dup.json";
  write(dup, R"({"id": "x.a", "id": "x.b", "description": "d", "expect": {"golden": true}})");
  const auto huge = dir.path() / "huge.json";
  write(huge, R"({"id": "x.h", "description": "d", "config": {"model": {"hidden_dropout": 1e800}}, "expect": {"golden": true}})");
  for (const auto& [file, what] : {std::pair{deep, std::string("/config/model/num_layers/0/0")},
                                   std::pair{dup, std::string("/id: duplicate key")},
                                   std::pair{huge, std::string("/config/model/hidden_dropout = 1e800")}}) {
    SCOPED_TRACE(file.string());
    try {
      load_case(file);
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.message().rfind(file.string() + ": " + what, 0), 0u) << e.message();
    }
  }
}

TEST(CaseFiles, OneHostileFileInADirectoryIsNamed) {
  ScratchDir dir;
  write(dir.path() / "good.json", R"({"id": "x.good", "description": "d", "expect": {"golden": true}})");
  write(dir.path() / "zz_deep.json", R"({"id": "x.deep", "description": "d", "config": )" + nested_objects(100000) + "}");
  try {
    load_cases({dir.path()});
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind((dir.path() / "zz_deep.json").string() + ": /config/a/a/", 0), 0u) << e.message();
  }
}

TEST(CaseFiles, ADirectoryWithoutCasesIsAnError) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.path() / "sub");
  write(dir.path() / "sub" / "notes.txt", "not a case");
  try {
    load_cases({dir.path()});
    ADD_FAILURE() << "an empty directory loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), dir.path().string() + ": no case files (*.json) in this directory");
  }
}

}  // namespace
}  // namespace rcts::harness
