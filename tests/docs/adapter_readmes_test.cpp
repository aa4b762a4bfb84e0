// Every adapter's README (adapters/<name>/README.md, the kit's aside: it is no adapter)
// has the same shape: a title "# rcts ... adapter", then before its first section a link
// to the contract (docs/adapter-contract.md), the `python -m rcts_<name>` command in a
// code block and a "| file | what |" table naming every Python file of the adapter
// (__init__.py aside); then the sections "What runs", "What it records" and "Faults".
// So an adapter added without such a README, a file added without its row, or a README
// drifting from the others fails here.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "doc_files.hpp"

namespace {

using namespace rcts::docs_test;

// What `readme` of the adapter whose package is `package` ("rcts_pytorch") lacks, one
// line each; `files` are its Python files as paths below the adapter's folder.
std::vector<std::string> shape_problems(const std::string& readme, const std::string& package,
                                        const std::vector<std::string>& files) {
  std::vector<std::string> out;
  if (!std::regex_search(readme, std::regex(R"(^# rcts [^\n]+ adapter\n)")))
    out.push_back("the first line is not \"# rcts <framework> adapter\"");
  const auto first_section = readme.find("\n## ");
  const std::string head = readme.substr(0, first_section);
  if (head.find("](../../docs/adapter-contract.md)") == std::string::npos)
    out.push_back("no link to the contract, [docs/adapter-contract.md](../../docs/adapter-contract.md), before the "
                  "first section");
  if (!std::regex_search(head, std::regex("```\\n(?:[^`]*\\n)?python -m " + package + "\\b")))
    out.push_back("no `python -m " + package + "` command in a code block before the first section");
  const auto table = head.find("\n| file | what |\n|---|---|\n");
  if (table == std::string::npos) {
    out.push_back("no \"| file | what |\" table before the first section");
  } else {
    for (const auto& f : files)
      if (head.find("| `" + f + "` |", table) == std::string::npos) out.push_back("the file table has no row `" + f + "`");
  }
  for (const char* section : {"What runs", "What it records", "Faults"})
    if (readme.find(std::string("\n## ") + section) == std::string::npos)
      out.push_back(std::string("no section \"## ") + section + "...\"");
  return out;
}

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

TEST(AdapterReadmes, EveryAdapterReadmeHasTheSameShape) {
  int adapters = 0;
  for (const auto& e : fs::directory_iterator(kRoot / "adapters")) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name == "kit" || name == "__pycache__") continue;
    ++adapters;
    ASSERT_TRUE(fs::exists(e.path() / "README.md")) << "adapters/" << name << " has no README.md";
    std::vector<std::string> files;
    for (const auto& f : tree_files([](const fs::path& p) { return p.extension() == ".py"; }, "adapters/" + name))
      if (f.filename() != "__init__.py" && f.string().find("__pycache__") == std::string::npos)
        files.push_back(fs::relative(f, e.path()).generic_string());
    const auto bad = shape_problems(read(e.path() / "README.md"), "rcts_" + name, files);
    EXPECT_TRUE(bad.empty()) << "adapters/" << name << "/README.md:" << listed(bad);
  }
  EXPECT_GE(adapters, 3) << "the walk found almost no adapters";
}

// The check can fail: each part of the shape, dropped from a README that has them all.
TEST(AdapterReadmes, EachPartOfTheShapeIsChecked) {
  const std::string good =
      "# rcts X adapter\n\nRuns. The contract: [docs/adapter-contract.md](../../docs/adapter-contract.md).\n\n"
      "```\npython -m rcts_x CASE.json\n```\n\n| file | what |\n|---|---|\n| `rcts_x/a.py` | a |\n"
      "| `check_x.py` | the driver |\n\n## What runs\n\nx\n\n## What it records\n\nx\n\n## Faults (`F`)\n\nx\n";
  const std::vector<std::string> files = {"rcts_x/a.py", "check_x.py"};
  EXPECT_TRUE(shape_problems(good, "rcts_x", files).empty()) << listed(shape_problems(good, "rcts_x", files));
  auto without = [&](const std::string& part, const std::string& instead = "") {
    std::string s = good;
    const auto at = s.find(part);
    EXPECT_NE(at, std::string::npos) << part;
    return shape_problems(s.replace(at, part.size(), instead), "rcts_x", files);
  };
  EXPECT_EQ(without("# rcts X adapter\n", "# X\n").size(), 1u);
  EXPECT_EQ(without("[docs/adapter-contract.md](../../docs/adapter-contract.md)", "the contract").size(), 1u);
  EXPECT_EQ(without("python -m rcts_x", "python -m rcts_y").size(), 1u);
  EXPECT_EQ(without("| `rcts_x/a.py` | a |\n").size(), 1u);
  EXPECT_EQ(without("| file | what |\n", "| path | what |\n").size(), 1u);
  EXPECT_EQ(without("## What it records", "## Records").size(), 1u);
  EXPECT_EQ(without("## Faults", "## Mistakes").size(), 1u);
  // The contract link and the command belong before the first section.
  EXPECT_EQ(shape_problems("# rcts X adapter\n\n## What runs\n[c](../../docs/adapter-contract.md)\n", "rcts_x", {}).size(),
            5u);
  // A file the table does not name.
  EXPECT_EQ(shape_problems(good, "rcts_x", {"rcts_x/a.py", "check_x.py", "rcts_x/b.py"}).size(), 1u);
}

}  // namespace
