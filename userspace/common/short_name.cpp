#include "common/short_name.h"

namespace gpuobs {
namespace {

// "operator<", "operator<<=", "operator()", "operator->": their brackets are
// the name, not a template or a parameter list.
size_t operator_name_end(std::string_view s, size_t i) {
  constexpr std::string_view kOp = "operator";
  if (i < kOp.size() || s.substr(i - kOp.size(), kOp.size()) != kOp) return 0;
  if (s.substr(i, 2) == "()") return i + 2;
  if (s.substr(i, 3) == "<<=" || s.substr(i, 3) == ">>=") return i + 3;
  if (s.substr(i, 2) == "<<" || s.substr(i, 2) == ">>" || s.substr(i, 2) == "<=" || s.substr(i, 2) == ">=" ||
      s.substr(i, 2) == "->")
    return i + 2;
  if (s[i] == '<' || s[i] == '>') return i + 1;
  return 0;
}

}  // namespace

std::string short_name(std::string_view s) {
  // "name (file:line)" (a Python frame, a label): not a C++ parameter list.
  {
    int depth = 0;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (s[i] == '<') ++depth;
      else if (s[i] == '>' && depth > 0) --depth;
      else if (s[i] == '(') break;  // the first parameter list: C++ from here
      else if (depth == 0 && s[i] == ' ' && s[i + 1] == '(' && s.compare(i + 1, 21, "(anonymous namespace)") != 0)
        return std::string(s);
    }
  }
  std::string out;
  out.reserve(s.size() < 128 ? s.size() : 128);
  int angle = 0, paren = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (angle == 0 && paren == 0) {
      if (size_t end = operator_name_end(s, i)) {
        out.append(s.substr(i, end - i));
        i = end - 1;
        continue;
      }
      // "(anonymous namespace)" is a name, kept.
      if (c == '(' && s.substr(i, 21) == "(anonymous namespace)") {
        out.append("(anonymous namespace)");
        i += 20;
        continue;
      }
    }
    if (c == '<' && paren == 0) {
      if (angle++ == 0) out += "<...>";
      continue;
    }
    if (c == '>' && paren == 0 && angle > 0) {
      --angle;
      continue;
    }
    if (angle > 0) continue;
    if (c == '(') {
      // "()" stays: no parameters to fold.
      if (paren++ == 0) out += i + 1 < s.size() && s[i + 1] == ')' ? "()" : "(...)";
      continue;
    }
    if (c == ')' && paren > 0) {
      --paren;
      continue;
    }
    if (paren > 0) continue;
    out += c;
  }
  // Unbalanced text (a name cut short, not C++): as it was.
  if (angle != 0 || paren != 0) return std::string(s);
  // The return type: "void ns::f<...>(...)" -> "ns::f<...>(...)": the last
  // space outside brackets before the parameter list separates it.
  size_t params = std::string::npos, space = std::string::npos;
  int depth = 0;
  for (size_t i = 0; i < out.size() && params == std::string::npos; ++i) {
    if (out.compare(i, 21, "(anonymous namespace)") == 0) {
      i += 20;
      continue;
    }
    if (size_t end = operator_name_end(out, i)) {  // operator<< is a name
      i = end - 1;
      continue;
    }
    if (out[i] == '<') ++depth;
    else if (out[i] == '>') --depth;
    else if (out[i] == '(' && depth == 0) params = i;
    else if (out[i] == ' ' && depth == 0) space = i;
  }
  if (params != std::string::npos && space != std::string::npos) out.erase(0, space + 1);
  return out;
}

}  // namespace gpuobs
