#include "symbols/rust_demangle.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace funclatency {
namespace {

// Bounds on the work one name may cost. Real symbols stay far below them
// (the deepest std names nest ~30 levels and print under 2 KB); a crafted
// one with backreferences to backreferences would otherwise print an output
// exponential in its length.
constexpr int kMaxNesting = 200;
constexpr size_t kMaxSteps = 100000;
constexpr size_t kMaxOutput = 64 * 1024;
constexpr size_t kMaxPunycodeChars = 1024;
constexpr uint64_t kMaxBoundLifetimes = 1000;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_code_point(uint64_t value) {
  return value <= 0x10FFFF && !(value >= 0xD800 && value <= 0xDFFF);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// What follows a mangled name: ".llvm.<digits>" (LTO's renaming of local
// copies) says nothing to a user and is dropped; anything else is kept.
std::string kept_suffix(std::string_view suffix) {
  return std::string(suffix.substr(0, suffix.find(".llvm.")));
}

// --- Legacy: _ZN <length><segment>... 17h<16 hex> E ------------------------

bool is_legacy_hash(std::string_view segment) {
  if (segment.size() != 17 || segment[0] != 'h') return false;
  for (char c : segment.substr(1)) {
    if (hex_value(c) < 0) return false;
  }
  return true;
}

// One segment with its escapes decoded: "$LT$" -> "<", "$u20$" -> " ",
// ".." -> "::" (a path inside a segment, as in "<a..B as c..D>").
std::optional<std::string> legacy_segment(std::string_view raw) {
  if (raw.starts_with("_$")) raw.remove_prefix(1);
  static constexpr std::pair<std::string_view, char> kEscapes[] = {
      {"SP", '@'}, {"BP", '*'}, {"RF", '&'}, {"LT", '<'},
      {"GT", '>'}, {"LP", '('}, {"RP", ')'}, {"C", ','}};
  std::string out;
  size_t i = 0;
  while (i < raw.size()) {
    const char c = raw[i];
    if (c == '.') {
      const bool path = i + 1 < raw.size() && raw[i + 1] == '.';
      out += path ? "::" : ".";
      i += path ? 2 : 1;
      continue;
    }
    if (c != '$') {
      out += c;
      ++i;
      continue;
    }
    const size_t end = raw.find('$', i + 1);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view code = raw.substr(i + 1, end - i - 1);
    i = end + 1;
    bool known = false;
    for (const auto& [name, character] : kEscapes) {
      if (code == name) {
        out += character;
        known = true;
      }
    }
    if (known) continue;
    if (code.size() < 2 || code.size() > 7 || code[0] != 'u') return std::nullopt;
    uint64_t value = 0;
    for (char digit : code.substr(1)) {
      const int v = hex_value(digit);
      if (v < 0) return std::nullopt;
      value = value * 16 + static_cast<uint64_t>(v);
    }
    if (!is_code_point(value)) return std::nullopt;
    append_utf8(out, static_cast<uint32_t>(value));
  }
  return out;
}

// True when "17h<16 hex>E" ends the name or comes right before a '.' suffix:
// a cheap test that turns C++ names away before they are parsed.
bool ends_with_legacy_hash(std::string_view symbol) {
  for (size_t end = symbol.size();; end = symbol.rfind('.', end - 1)) {
    if (end != std::string_view::npos && end >= 20 && symbol[end - 1] == 'E' &&
        symbol.substr(end - 20, 2) == "17" && is_legacy_hash(symbol.substr(end - 18, 17))) {
      return true;
    }
    if (end == std::string_view::npos || end == 0) return false;
  }
}

std::optional<RustName> demangle_legacy(std::string_view symbol) {
  if (!ends_with_legacy_hash(symbol)) return std::nullopt;
  std::string_view rest = symbol.substr(3);  // past "_ZN"
  std::vector<std::string_view> segments;
  while (true) {
    if (rest.empty()) return std::nullopt;
    if (rest[0] == 'E') {
      rest.remove_prefix(1);
      break;
    }
    if (!is_digit(rest[0]) || rest[0] == '0') return std::nullopt;
    size_t length = 0;
    size_t digits = 0;
    while (digits < rest.size() && is_digit(rest[digits])) {
      length = length * 10 + static_cast<size_t>(rest[digits] - '0');
      if (length > rest.size()) return std::nullopt;
      ++digits;
    }
    rest.remove_prefix(digits);
    if (length > rest.size()) return std::nullopt;
    segments.push_back(rest.substr(0, length));
    rest.remove_prefix(length);
  }
  if (segments.size() < 2 || !is_legacy_hash(segments.back())) return std::nullopt;
  if (!rest.empty() && rest[0] != '.') return std::nullopt;
  RustName name;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    auto segment = legacy_segment(segments[i]);
    if (!segment) return std::nullopt;
    if (i > 0) name.path += "::";
    name.path += *segment;
  }
  const std::string suffix = kept_suffix(rest);
  name.with_hash = name.path + "::" + std::string(segments.back()) + suffix;
  name.path += suffix;
  name.unqualified = name.path;
  return name;
}

// --- v0 (RFC 2603): _R <path> [<instantiating crate>] [<suffix>] -------------

// Punycode (RFC 3492) as v0 identifiers carry it: "<basic>_<deltas>", '_'
// standing for punycode's '-'. The decoded identifier in UTF-8.
std::optional<std::string> decode_punycode(std::string_view bytes) {
  constexpr uint64_t kBase = 36, kTmin = 1, kTmax = 26, kSkew = 38, kDamp = 700;
  constexpr uint64_t kLimit = std::numeric_limits<uint32_t>::max();
  std::string_view basic;
  std::string_view deltas = bytes;
  if (const size_t split = bytes.rfind('_'); split != std::string_view::npos) {
    basic = bytes.substr(0, split);
    deltas = bytes.substr(split + 1);
  }
  if (basic.size() > kMaxPunycodeChars) return std::nullopt;
  std::vector<uint32_t> chars;
  for (char c : basic) {
    if (static_cast<unsigned char>(c) >= 0x80) return std::nullopt;
    chars.push_back(static_cast<uint32_t>(c));
  }
  uint64_t n = 128, bias = 72, i = 0;
  size_t at = 0;
  while (at < deltas.size()) {
    const uint64_t old_i = i;
    uint64_t weight = 1;
    for (uint64_t k = kBase;; k += kBase) {
      if (at >= deltas.size()) return std::nullopt;
      const char c = deltas[at++];
      uint64_t digit;
      if (is_lower(c)) {
        digit = static_cast<uint64_t>(c - 'a');
      } else if (is_digit(c)) {
        digit = static_cast<uint64_t>(c - '0') + 26;
      } else {
        return std::nullopt;
      }
      if (digit > (kLimit - i) / weight) return std::nullopt;
      i += digit * weight;
      const uint64_t t = k <= bias ? kTmin : (k >= bias + kTmax ? kTmax : k - bias);
      if (digit < t) break;
      if (weight > kLimit / (kBase - t)) return std::nullopt;
      weight *= kBase - t;
    }
    const uint64_t length = chars.size() + 1;
    uint64_t delta = (i - old_i) / (old_i == 0 ? kDamp : 2);
    delta += delta / length;
    uint64_t k = 0;
    while (delta > ((kBase - kTmin) * kTmax) / 2) {
      delta /= kBase - kTmin;
      k += kBase;
    }
    bias = k + (kBase - kTmin + 1) * delta / (delta + kSkew);
    n += i / length;
    i %= length;
    if (!is_code_point(n) || chars.size() >= kMaxPunycodeChars) return std::nullopt;
    chars.insert(chars.begin() + static_cast<std::ptrdiff_t>(i), static_cast<uint32_t>(n));
    ++i;
  }
  std::string out;
  for (uint32_t c : chars) append_utf8(out, c);
  return out;
}

struct Identifier {
  std::string_view bytes;
  bool punycode = false;
  uint64_t disambiguator = 0;
};

std::string lifetime_name(uint64_t depth) {
  if (depth < 26) return std::string("'") + static_cast<char>('a' + depth);
  return "'_" + std::to_string(depth);
}

const char* basic_type(char tag) {
  switch (tag) {
    case 'a':
      return "i8";
    case 'b':
      return "bool";
    case 'c':
      return "char";
    case 'd':
      return "f64";
    case 'e':
      return "str";
    case 'f':
      return "f32";
    case 'h':
      return "u8";
    case 'i':
      return "isize";
    case 'j':
      return "usize";
    case 'l':
      return "i32";
    case 'm':
      return "u32";
    case 'n':
      return "i128";
    case 'o':
      return "u128";
    case 's':
      return "i16";
    case 't':
      return "u16";
    case 'u':
      return "()";
    case 'v':
      return "...";
    case 'x':
      return "i64";
    case 'y':
      return "u64";
    case 'z':
      return "!";
    case 'p':
      return "_";
    default:
      return nullptr;
  }
}

// Parses and prints at once; a backreference parses the text it points at
// again (so nothing is stored per node). Every production returns false on
// malformed input; the parser then gives up on the whole name.
class V0Parser {
 public:
  explicit V0Parser(std::string_view text) : text_(text) {}

  std::optional<RustName> parse() {
    if (at_end() || is_digit(peek())) return std::nullopt;  // an encoding version: none in use
    size_t unqualified_end = 0;
    if (eat('I')) {
      if (!path(true)) return std::nullopt;
      unqualified_end = out_.size();
      print("::<");
      if (!generic_args()) return std::nullopt;
      print(">");
    } else {
      if (!path(true)) return std::nullopt;
      unqualified_end = out_.size();
    }
    // The crate that instantiated a generic: not part of the name users read.
    if (!at_end() && is_upper(peek())) {
      printing_ = false;
      const bool parsed = path(false);
      printing_ = true;
      if (!parsed) return std::nullopt;
    }
    const std::string_view suffix = text_.substr(pos_);
    if (!suffix.empty() && suffix[0] != '.' && suffix[0] != '$') return std::nullopt;
    if (out_.size() > kMaxOutput) return std::nullopt;
    RustName name;
    name.unqualified = out_.substr(0, unqualified_end) + kept_suffix(suffix);
    name.path = out_ + kept_suffix(suffix);
    return name;
  }

 private:
  // Counts nesting and steps for one production; ok() is false past a bound.
  class Step {
   public:
    explicit Step(V0Parser& parser) : parser_(parser) {
      ++parser_.nesting_;
      ++parser_.steps_;
    }
    ~Step() { --parser_.nesting_; }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;
    bool ok() const {
      return parser_.nesting_ <= kMaxNesting && parser_.steps_ <= kMaxSteps &&
             parser_.out_.size() <= kMaxOutput;
    }

   private:
    V0Parser& parser_;
  };

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool eat(char c) {
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void print(std::string_view s) {
    if (printing_) out_ += s;
  }

  // "_" is 0; "<digits>_" is the digits in base 62 (0-9a-zA-Z), plus one.
  bool base62(uint64_t& value) {
    if (eat('_')) {
      value = 0;
      return true;
    }
    uint64_t x = 0;
    while (!eat('_')) {
      const char c = peek();
      uint64_t digit;
      if (is_digit(c)) {
        digit = static_cast<uint64_t>(c - '0');
      } else if (is_lower(c)) {
        digit = static_cast<uint64_t>(c - 'a') + 10;
      } else if (is_upper(c)) {
        digit = static_cast<uint64_t>(c - 'A') + 36;
      } else {
        return false;
      }
      if (x > (std::numeric_limits<uint64_t>::max() - digit) / 62) return false;
      x = x * 62 + digit;
      ++pos_;
    }
    if (x == std::numeric_limits<uint64_t>::max()) return false;
    value = x + 1;
    return true;
  }

  // Absent: 0; `tag` and a base-62 number: that number plus one.
  bool optional_base62(char tag, uint64_t& value) {
    value = 0;
    if (!eat(tag)) return true;
    if (!base62(value) || value == std::numeric_limits<uint64_t>::max()) return false;
    ++value;
    return true;
  }

  bool decimal(uint64_t& value) {
    if (!is_digit(peek())) return false;
    value = 0;
    if (eat('0')) return true;
    while (is_digit(peek())) {
      const auto digit = static_cast<uint64_t>(peek() - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
      value = value * 10 + digit;
      ++pos_;
    }
    return true;
  }

  bool undisambiguated_identifier(Identifier& identifier) {
    identifier.punycode = eat('u');
    uint64_t length = 0;
    if (!decimal(length)) return false;
    eat('_');  // separates the length from bytes that start with a digit or '_'
    if (length > text_.size() - pos_) return false;
    identifier.bytes = text_.substr(pos_, length);
    pos_ += length;
    return true;
  }

  bool identifier(Identifier& identifier) {
    return optional_base62('s', identifier.disambiguator) && undisambiguated_identifier(identifier);
  }

  bool print_identifier(const Identifier& identifier) {
    if (!printing_) return true;
    if (!identifier.punycode) {
      print(identifier.bytes);
      return true;
    }
    auto decoded = decode_punycode(identifier.bytes);
    if (!decoded) return false;
    print(*decoded);
    return true;
  }

  template <typename Parse>
  bool backref(Parse&& parse) {
    const size_t start = pos_ - 1;  // the 'B'
    uint64_t target = 0;
    if (!base62(target) || target >= start) return false;
    if (!printing_) return true;  // the text it points at parsed already
    const size_t resume = pos_;
    pos_ = static_cast<size_t>(target);
    const bool parsed = parse();
    pos_ = resume;
    return parsed;
  }

  bool path(bool in_value) {
    Step step(*this);
    if (!step.ok() || at_end()) return false;
    const char tag = text_[pos_++];
    switch (tag) {
      case 'C': {  // crate root
        Identifier name;
        return identifier(name) && print_identifier(name);
      }
      case 'M':  // <Type>: an inherent impl
        if (!impl_path()) return false;
        print("<");
        if (!type()) return false;
        print(">");
        return true;
      case 'X':  // <Type as Trait>: a trait impl
        if (!impl_path()) return false;
        [[fallthrough]];
      case 'Y':  // <Type as Trait>: a trait's own item
        print("<");
        if (!type()) return false;
        print(" as ");
        if (!path(false)) return false;
        print(">");
        return true;
      case 'N':
        return nested_path(in_value);
      case 'I':
        if (!path(in_value)) return false;
        print(in_value ? "::<" : "<");
        if (!generic_args()) return false;
        print(">");
        return true;
      case 'B':
        return backref([&] { return path(in_value); });
      default:
        return false;
    }
  }

  // "N" <namespace> <path> <identifier>: an upper-case namespace is one the
  // compiler made ("{closure#0}", "{shim:vtable#0}"), a lower-case one a name
  // from the source.
  bool nested_path(bool in_value) {
    const char ns = peek();
    if (!is_lower(ns) && !is_upper(ns)) return false;
    ++pos_;
    if (!path(in_value)) return false;
    Identifier name;
    if (!identifier(name)) return false;
    if (is_lower(ns)) {
      if (name.bytes.empty()) return true;
      print("::");
      return print_identifier(name);
    }
    print("::{");
    if (ns == 'C') {
      print("closure");
    } else if (ns == 'S') {
      print("shim");
    } else {
      print(std::string_view(&ns, 1));
    }
    if (!name.bytes.empty()) {
      print(":");
      if (!print_identifier(name)) return false;
    }
    print("#" + std::to_string(name.disambiguator) + "}");
    return true;
  }

  // Where an impl block is (its module): not printed.
  bool impl_path() {
    uint64_t disambiguator = 0;
    if (!optional_base62('s', disambiguator)) return false;
    const bool was_printing = printing_;
    printing_ = false;
    const bool parsed = path(false);
    printing_ = was_printing;
    return parsed;
  }

  // {<generic-arg>} "E", printed ", "-separated.
  bool generic_args() {
    for (size_t count = 0; !eat('E'); ++count) {
      if (at_end()) return false;
      if (count > 0) print(", ");
      if (!generic_arg()) return false;
    }
    return true;
  }

  bool generic_arg() {
    if (eat('L')) {
      uint64_t index = 0;
      return base62(index) && print_lifetime(index);
    }
    if (eat('K')) return konst();
    return type();
  }

  // Index 0 is an erased lifetime; others count back from the innermost binder.
  bool print_lifetime(uint64_t index) {
    if (index == 0) {
      print("'_");
      return true;
    }
    if (index > bound_lifetimes_) return false;
    print(lifetime_name(bound_lifetimes_ - index));
    return true;
  }

  // ["G" <base-62-number>]: "for<'a, 'b> ", lifetimes in scope until the
  // caller takes `added` off again.
  bool binder(uint64_t& added) {
    added = 0;
    if (!eat('G')) return true;
    uint64_t count = 0;
    if (!base62(count) || count >= kMaxBoundLifetimes) return false;
    added = count + 1;
    print("for<");
    for (uint64_t i = 0; i < added; ++i) {
      if (i > 0) print(", ");
      print(lifetime_name(bound_lifetimes_++));
    }
    print("> ");
    return true;
  }

  bool type() {
    Step step(*this);
    if (!step.ok() || at_end()) return false;
    const char tag = peek();
    if (const char* basic = basic_type(tag)) {
      ++pos_;
      print(basic);
      return true;
    }
    switch (tag) {
      case 'A':  // [T; N]
        ++pos_;
        print("[");
        if (!type()) return false;
        print("; ");
        if (!konst()) return false;
        print("]");
        return true;
      case 'S':  // [T]
        ++pos_;
        print("[");
        if (!type()) return false;
        print("]");
        return true;
      case 'T':
        ++pos_;
        return tuple();
      case 'R':
      case 'Q':
        ++pos_;
        print("&");
        if (eat('L')) {
          uint64_t index = 0;
          if (!base62(index)) return false;
          if (index != 0) {
            if (!print_lifetime(index)) return false;
            print(" ");
          }
        }
        if (tag == 'Q') print("mut ");
        return type();
      case 'P':
      case 'O':
        ++pos_;
        print(tag == 'P' ? "*const " : "*mut ");
        return type();
      case 'F':
        ++pos_;
        return fn_signature();
      case 'D':
        ++pos_;
        return dyn_type();
      case 'B':
        ++pos_;
        return backref([&] { return type(); });
      default:
        return path(false);
    }
  }

  bool tuple() {
    print("(");
    size_t count = 0;
    for (; !eat('E'); ++count) {
      if (at_end()) return false;
      if (count > 0) print(", ");
      if (!type()) return false;
    }
    if (count == 1) print(",");
    print(")");
    return true;
  }

  // [<binder>] ["U"] ["K" <abi>] {<type>} "E" <return type>
  bool fn_signature() {
    uint64_t added = 0;
    if (!binder(added)) return false;
    if (eat('U')) print("unsafe ");
    if (eat('K')) {
      print("extern \"");
      if (eat('C')) {
        print("C");
      } else {
        Identifier abi;
        if (!undisambiguated_identifier(abi) || abi.punycode) return false;
        for (char c : abi.bytes) print(c == '_' ? "-" : std::string_view(&c, 1));
      }
      print("\" ");
    }
    print("fn(");
    for (size_t count = 0; !eat('E'); ++count) {
      if (at_end()) return false;
      if (count > 0) print(", ");
      if (!type()) return false;
    }
    print(")");
    if (!eat('u')) {
      print(" -> ");
      if (!type()) return false;
    }
    bound_lifetimes_ -= added;
    return true;
  }

  // "D" [<binder>] {<dyn-trait>} "E" <lifetime>: "dyn Trait<Item = T> + Send + 'a".
  bool dyn_type() {
    print("dyn ");
    uint64_t added = 0;
    if (!binder(added)) return false;
    for (size_t count = 0; !eat('E'); ++count) {
      if (at_end()) return false;
      if (count > 0) print(" + ");
      if (!dyn_trait()) return false;
    }
    bound_lifetimes_ -= added;
    if (!eat('L')) return false;
    uint64_t index = 0;
    if (!base62(index)) return false;
    if (index == 0) return true;
    print(" + ");
    return print_lifetime(index);
  }

  // <path> {"p" <name> <type>}: associated type bindings go inside the
  // trait's own generic arguments when it has some.
  bool dyn_trait() {
    bool open = false;
    if (!trait_path(open)) return false;
    while (eat('p')) {
      print(open ? ", " : "<");
      open = true;
      Identifier name;
      if (!undisambiguated_identifier(name) || !print_identifier(name)) return false;
      print(" = ");
      if (!type()) return false;
    }
    if (open) print(">");
    return true;
  }

  // A path whose generic arguments, if any, are left open ("Trait<A").
  bool trait_path(bool& open) {
    Step step(*this);
    if (!step.ok()) return false;
    if (eat('B')) return backref([&] { return trait_path(open); });
    if (!eat('I')) return path(false);
    if (!path(false)) return false;
    print("<");
    for (size_t count = 0; !eat('E'); ++count) {
      if (at_end()) return false;
      if (count > 0) print(", ");
      if (!generic_arg()) return false;
    }
    open = true;
    return true;
  }

  // <type> <hex digits> "_" (integers, bool, char), "p" (a placeholder), or
  // a backreference.
  bool konst() {
    Step step(*this);
    if (!step.ok() || at_end()) return false;
    if (eat('p')) {
      print("_");
      return true;
    }
    if (eat('B')) return backref([&] { return konst(); });
    const char tag = text_[pos_++];
    const bool is_signed = std::string_view("aslxni").find(tag) != std::string_view::npos;
    const bool is_unsigned = std::string_view("htmyoj").find(tag) != std::string_view::npos;
    if (!is_signed && !is_unsigned && tag != 'b' && tag != 'c') return false;
    const bool negative = eat('n');
    if (negative && !is_signed) return false;
    const size_t start = pos_;
    while (hex_value(peek()) >= 0) ++pos_;
    std::string_view hex = text_.substr(start, pos_ - start);
    if (!eat('_')) return false;
    while (hex.size() > 1 && hex[0] == '0') hex.remove_prefix(1);
    if (hex.size() > 16) {
      if (tag == 'b' || tag == 'c') return false;
      print(negative ? "-0x" : "0x");
      print(hex);
      return true;
    }
    uint64_t value = 0;
    for (char c : hex) value = value * 16 + static_cast<uint64_t>(hex_value(c));
    if (tag == 'b') {
      if (value > 1) return false;
      print(value ? "true" : "false");
      return true;
    }
    if (tag == 'c') return print_char(value);
    print((negative ? "-" : "") + std::to_string(value));
    return true;
  }

  bool print_char(uint64_t value) {
    if (!is_code_point(value)) return false;
    std::string text = "'";
    if (value == '\'' || value == '\\') {
      text += '\\';
      text += static_cast<char>(value);
    } else if ((value >= 0x20 && value < 0x7F) || value >= 0xA0) {
      append_utf8(text, static_cast<uint32_t>(value));
    } else {
      char escaped[16];
      std::snprintf(escaped, sizeof escaped, "\\u{%x}", static_cast<unsigned>(value));
      text += escaped;
    }
    print(text + "'");
    return true;
  }

  std::string_view text_;  // the name after "_R": backreferences are offsets into it
  size_t pos_ = 0;
  std::string out_;
  bool printing_ = true;
  int nesting_ = 0;
  size_t steps_ = 0;
  uint64_t bound_lifetimes_ = 0;
};

}  // namespace

std::optional<RustName> demangle_rust(std::string_view symbol) {
  if (symbol.starts_with("_R")) return V0Parser(symbol.substr(2)).parse();
  if (symbol.starts_with("_ZN")) return demangle_legacy(symbol);
  return std::nullopt;
}

}  // namespace funclatency
