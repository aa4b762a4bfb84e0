// The strict JSON parser: a validating SAX pass (depth, duplicate keys, and the
// parser's own errors mapped to a JSON path), then nlohmann's DOM parse of text
// known to be valid and shallow. nlohmann's parser is iterative, so the SAX pass
// itself is safe at any depth; copying or printing a deep value is not.
#include "harness/io/strict_json.hpp"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <algorithm>
#include <set>
#include <vector>

#include "reference/config/limits.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Error text must stay printable and valid UTF-8 (it ends up in JSON reports).
std::string printable(std::string_view s, size_t max = 80) {
  std::string out;
  for (unsigned char ch : s.substr(0, max)) {
    if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    }
  }
  return s.size() > max ? out + "..." : out;
}

std::string pointer_token(const std::string& key) {
  std::string t;
  for (char ch : key) t += ch == '~' ? "~0" : ch == '/' ? "~1" : std::string(1, ch);
  return t;
}

class StrictSax final : public nlohmann::json_sax<json> {
 public:
  StrictSax(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override { return push(true); }
  bool start_array(std::size_t) override { return push(false); }
  bool end_object() override { return pop(); }
  bool end_array() override { return pop(); }

  bool key(string_t& k) override {
    Frame& f = frames_.back();
    f.key = k;
    f.has_key = true;
    if (!f.keys.insert(k).second)
      return fail(shown_path() + ": duplicate key \"" + printable(k) + "\" (each key may appear once in an object)");
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    if (ex.id == 406)  // number overflow: the lexer read a literal beyond a double; say where it starts
      return fail(shown_path() + " = " + printable(last_token) + ": number out of range of a double (line " +
                  line_column(position - std::min(position, last_token.size()) + 1) + ")");
    const std::string where = " (line " + line_column(position) + ")";
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    std::string what = ex.what();
    const auto colon = what.find(": ", what.find("column"));
    if (what.find("column") != std::string::npos && colon != std::string::npos) what = what.substr(colon + 2);
    return fail(shown_path() + " = " + text_at(position) + ": invalid JSON" +
                where + ": " + printable(what, 240));
  }

  const std::string& error() const { return error_; }

 private:
  struct Frame {
    bool object = false;
    std::string key;       // object: the current key
    bool has_key = false;
    size_t index = 0;      // array: the current element
    std::set<std::string> keys;
  };

  // For messages: keys may be long and the path 64 levels deep.
  std::string shown_path() const { return printable(path(), 160); }

  // JSON pointer of the value being read.
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.object && !f.has_key) continue;
      p += '/';
      p += f.object ? pointer_token(f.key) : std::to_string(f.index);
    }
    return p.empty() ? "/" : p;
  }

  // The offending text: up to 24 characters from the start of the word that holds the
  // `position`-th character (NaN, Infinity, a stray word), or "(end of text)".
  std::string text_at(size_t position) const {
    if (position == 0 || position > text_.size()) return "(end of text)";
    size_t at = position - 1;
    while (at > 0 && std::isalnum(static_cast<unsigned char>(text_[at - 1]))) --at;
    return "'" + printable(text_.substr(at), 24) + "'";
  }

  // Line and column of the `position`-th character (1-based), as nlohmann counts.
  std::string line_column(size_t position) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < position && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return std::to_string(line) + ", column " + std::to_string(column);
  }

  bool scalar() {
    next();
    return true;
  }
  // One value of the enclosing array is complete.
  void next() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  bool push(bool object) {
    if (frames_.size() >= static_cast<size_t>(limits::kMaxJsonDepth))
      return fail(shown_path() + " = " + (object ? "{" : "[") + "...: nested deeper than " +
                  std::to_string(limits::kMaxJsonDepth) + " levels (the limit for rcts input)");
    frames_.push_back({object, {}, false, 0, {}});
    return true;
  }
  bool pop() {
    frames_.pop_back();
    next();
    return true;
  }
  bool fail(const std::string& what) {
    error_ = source_ + ": " + what;
    return false;
  }

  std::string_view text_;
  const std::string& source_;
  std::vector<Frame> frames_;
  std::string error_;
};

}  // namespace

json parse_json_text(std::string_view text, const std::string& source) {
  // The JSON lexer reads a NUL byte as the end of the text: one may hide what follows.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(source + ": a NUL byte at offset " + std::to_string(nul) + " (JSON text holds none)");
  StrictSax sax(text, source);
  if (!json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, /*strict=*/true,
                       /*ignore_comments=*/false))
    throw Error(sax.error().empty() ? source + ": invalid JSON" : sax.error());
  try {
    return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {  // not expected after the SAX pass: still name the source
    throw Error(source + ": invalid JSON: " + printable(e.what(), 240));
  }
}

json read_json_file(const fs::path& file, const std::string& what) {
  const std::string name = file.string();
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (!fs::exists(st)) throw Error(name + ": no such " + what);
  if (fs::is_directory(st)) throw Error(name + ": is a directory, not a " + what + " (a JSON file)");
  if (!fs::is_regular_file(st)) throw Error(name + ": not a regular file, cannot be a " + what);
  const auto size = fs::file_size(file, ec);
  if (ec) throw Error(name + ": cannot read the " + what + " (" + ec.message() + ")");
  if (size > static_cast<uintmax_t>(limits::kMaxJsonFileBytes))
    throw Error(name + ": " + std::to_string(size) + " bytes, more than the " +
                std::to_string(limits::kMaxJsonFileBytes) + " a " + what + " may have");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(name + ": cannot open the " + what);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.gcount() != static_cast<std::streamsize>(text.size()))
    throw Error(name + ": cannot read the " + what + " (it changed while being read?)");
  return parse_json_text(text, name);
}

}  // namespace rcts::harness
