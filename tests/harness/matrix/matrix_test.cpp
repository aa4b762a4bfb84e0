// rcts matrix (harness/matrix/matrix.hpp) on hand-written results JSONs: columns per report,
// backend and world size, cells of every kind, the first divergence, the markdown and
// HTML texts, and bad reports.
#include <gtest/gtest.h>

#include "harness/matrix/matrix.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;

// Lists are std::vector<json>, not json: a one-element braced list `{x}` initialises a json
// as a copy of x under clang and as a one-element array under g++ (nlohmann/json's
// brace-initialisation caveat).
json report(const std::string& backend, int ranks, std::vector<json> cases) {
  return {{"schema", "rcts-results"},
          {"schema_version", 1},
          {"header", {{"backend", backend}, {"ranks", ranks}, {"git_sha", "abc123"}, {"version", "0.1.0"}, {"seed", 0}}},
          {"summary", json::object()},
          {"cases", std::move(cases)}};
}

json kase(const std::string& id, const std::string& backend, const std::string& outcome, const std::string& reason = "",
          std::vector<json> checks = {}) {
  return {{"id", id}, {"backend", backend}, {"file", "cases/x.json"}, {"outcome", outcome}, {"reason", reason}, {"checks", checks}};
}

json check(const std::string& kind, const std::string& outcome, const std::string& detail = "") {
  return {{"kind", kind}, {"outcome", outcome}, {"detail", detail}};
}

// rcts on cpu at 1 and 2 ranks, and an adapter's check under an expectation file.
std::vector<MatrixInput> inputs() {
  json np1 = report("cpu", 1,
                    {kase("full.block", "cpu", "pass", "", {check("bitwise", "pass")}),
                     kase("tp.two", "cpu", "skip", "needs 2 ranks, this run has 1"),
                     kase("rng.drop", "cpu", "fail",
                          "first divergence: step 0 micro-batch 0, recompute dropout draw: mask differs\nrng: ...",
                          {check("bitwise", "fail", "grad differs"), check("rng", "fail", "state differs")})});
  json np2 = report("cpu", 2, {kase("tp.two", "cpu", "pass"), kase("full.block", "cpu", "skip", "needs 1 ranks, this run has 2")});
  json torch = report("dumps", 1,
                      {kase("full.block", "torch-cpu", "fail", "memory: 10 bytes over", {check("memory", "fail", "over")}),
                       kase("rng.drop", "torch-cpu", "pass"), kase("moe.a", "torch-cpu", "skip", "skipped by the implementation: dense only"),
                       kase("sel.x", "torch-cpu", "fail", "", {check("masks", "fail", "mask 3 differs\nmore")})});
  torch["cases"][0]["expectation"] = {{"verdict", "expected-fail"}, {"entry", 0}, {"note", ""}};
  torch["cases"][1]["expectation"] = {{"verdict", "unexpected-pass"}, {"entry", 1}, {"note", "..."}};
  torch["cases"][2]["expectation"] = {{"verdict", "expected-skip"}, {"entry", 2}, {"note", ""}};
  torch["cases"][3]["expectation"] = {{"verdict", "regression"}, {"entry", nullptr}, {"note", "expected to pass"}};
  torch["expectations"] = {{"implementation", "pytorch-reentrant"}, {"implementation_version", "torch 2.15.0"}};
  return {{"", "np1.json", np1}, {"", "np2.json", np2}, {"", "torch.json", torch}};
}

const MatrixCell& cell(const Matrix& m, const std::string& id, size_t col) {
  const size_t row = static_cast<size_t>(std::find(m.rows.begin(), m.rows.end(), id) - m.rows.begin());
  return m.cells.at({row, col});
}

TEST(Matrix, ColumnsRowsAndCells) {
  const Matrix m = build_matrix(inputs());
  ASSERT_EQ(m.columns.size(), 3u);
  EXPECT_EQ(m.columns[0].label, "cpu np1");
  EXPECT_EQ(m.columns[1].label, "cpu np2");
  EXPECT_EQ(m.columns[2].label, "pytorch-reentrant np1");
  EXPECT_EQ(m.columns[2].version, "torch 2.15.0");
  EXPECT_EQ(m.columns[2].backend, "torch-cpu");
  EXPECT_EQ(m.rows, (std::vector<std::string>{"full.block", "moe.a", "rng.drop", "sel.x", "tp.two"}));
  EXPECT_EQ(m.cells.size(), 3u + 2u + 4u);
  EXPECT_EQ(cell_text(cell(m, "full.block", 0)), "pass");
  EXPECT_EQ(cell_text(cell(m, "tp.two", 0)), "skip: needs 2 ranks, this run has 1");
  EXPECT_EQ(cell_text(cell(m, "rng.drop", 0)), "fail: bitwise, rng");
  EXPECT_EQ(cell(m, "rng.drop", 0).divergence, "first divergence: step 0 micro-batch 0, recompute dropout draw: mask differs");
  EXPECT_EQ(cell_text(cell(m, "tp.two", 1)), "pass");
  EXPECT_EQ(cell_text(cell(m, "full.block", 2)), "expected-fail: memory");
  EXPECT_EQ(cell_class(cell(m, "full.block", 2)), "expected");
  EXPECT_EQ(cell_text(cell(m, "rng.drop", 2)), "pass (unexpected)");
  EXPECT_EQ(cell_class(cell(m, "rng.drop", 2)), "warn");
  EXPECT_EQ(cell_text(cell(m, "moe.a", 2)), "expected-skip");
  EXPECT_EQ(cell_text(cell(m, "sel.x", 2)), "fail: masks (regression)");
  EXPECT_EQ(cell_class(cell(m, "sel.x", 2)), "fail");
  // No reason: the first failing check's detail is the divergence line.
  EXPECT_EQ(cell(m, "sel.x", 2).divergence, "mask 3 differs");
  EXPECT_EQ(m.cells.count({1, 0}), 0u);  // moe.a is not in rcts's reports
}

TEST(Matrix, Markdown) {
  auto in = inputs();
  in.erase(in.begin() + 1);
  const std::string md = matrix_markdown(build_matrix(in));
  EXPECT_EQ(md,
            "| case | cpu np1 | pytorch-reentrant np1 |\n"
            "|---|---|---|\n"
            "| `full.block` | pass | expected-fail: memory [1] |\n"
            "| `moe.a` | — | expected-skip |\n"
            "| `rng.drop` | **fail: bitwise, rng** [2] | pass (unexpected) |\n"
            "| `sel.x` | — | **fail: masks (regression)** [3] |\n"
            "| `tp.two` | skip: needs 2 ranks, this run has 1 | — |\n"
            "| *summary* | 1 pass, 1 fail, 1 skip | 1 fail, 2 expected, 1 warn |\n"
            "\n"
            "1. `full.block`, pytorch-reentrant np1: memory: 10 bytes over\n"
            "2. `rng.drop`, cpu np1: first divergence: step 0 micro-batch 0, recompute dropout draw: mask differs\n"
            "3. `sel.x`, pytorch-reentrant np1: mask 3 differs\n");
}

TEST(Matrix, HtmlIsSelfContained) {
  const std::string html = matrix_html(build_matrix(inputs()), "results <&>");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_NE(html.find("<title>results &lt;&amp;&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"fail\" data-outcome=\"fail\" title=\"first divergence: step 0 micro-batch 0, recompute "
                      "dropout draw: mask differs\">fail: bitwise, rng <a href=\"#d2\">[2]</a></td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<li id=\"d2\"><b>rng.drop</b> · cpu np1: fail: bitwise, rng<pre>first divergence: step 0 "
                      "micro-batch 0, recompute dropout draw: mask differs\nrng: ...</pre></li>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("data-verdict=\"unexpected-pass\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"absent\" title=\"not in this report\">—</td>"), std::string::npos);
  EXPECT_NE(html.find("torch 2.15.0; torch-cpu, 1 rank(s)"), std::string::npos);
}

TEST(Matrix, LabelsAndBackendsMakeColumns) {
  json two = report("the backends each case lists", 1,
                    {kase("a", "cpu", "pass"), kase("a", "cuda", "skip", "backend 'cuda' cannot run here: no device")});
  Matrix m = build_matrix({{"ref", "two.json", two}});
  ASSERT_EQ(m.columns.size(), 2u);
  EXPECT_EQ(m.columns[0].label, "ref [cpu]");
  EXPECT_EQ(m.columns[1].label, "ref [cuda]");
  EXPECT_EQ(cell_text(m.cells.at({0, 1})), "skip: backend 'cuda' cannot run here: no device");
  m = build_matrix({{"", "two.json", two}});
  EXPECT_EQ(m.columns[0].label, "cpu np1");
}

TEST(Matrix, BadReportsAreRefusedNamingFileAndPath) {
  auto err = [](std::vector<MatrixInput> in) -> std::string {
    try {
      build_matrix(in);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  auto in = inputs();
  EXPECT_NE(err({in[0], {"", "again.json", in[0].report}}).find("again.json: column 'cpu np1' is also np1.json's"),
            std::string::npos);
  EXPECT_EQ(err({in[0], {"rerun", "again.json", in[0].report}}), "");
  json bad = in[0].report;
  bad["schema"] = "rcts-list";
  EXPECT_NE(err({{"", "bad.json", bad}}).find("bad.json: /schema = \"rcts-list\": not an rcts results JSON"), std::string::npos);
  bad = in[0].report;
  bad["schema_version"] = 2;
  EXPECT_NE(err({{"", "bad.json", bad}}).find("/schema_version = 2"), std::string::npos);
  bad = in[0].report;
  bad["cases"][1]["outcome"] = "passed";
  EXPECT_NE(err({{"", "bad.json", bad}}).find("bad.json: /cases/1/outcome = \"passed\": expected pass, fail"), std::string::npos);
  bad = in[0].report;
  bad["cases"].push_back(bad["cases"][0]);
  EXPECT_NE(err({{"", "bad.json", bad}}).find("/cases/3/id = \"full.block\": case 'full.block' is in the report twice"),
            std::string::npos);
  bad = in[0].report;
  bad["cases"][0].erase("checks");
  EXPECT_NE(err({{"", "bad.json", bad}}).find("/cases/0 = "), std::string::npos);
  bad = in[0].report;
  bad["header"].erase("ranks");
  EXPECT_NE(err({{"", "bad.json", bad}}).find("missing key 'ranks'"), std::string::npos);
}

}  // namespace
}  // namespace rcts::harness
