// Text from traced processes (kernel names read from their memory, comm,
// executable and library paths) is printed to root's terminal by the tables,
// `stacks`, `status` and the log. Any process can name itself or its files
// with ESC, CR or LF, and so clear, rewrite or forge that output; these
// helpers make such text inert. CSV uses them too (it is read on terminals
// as often as by programs); JSON and folded stacks escape by their own rules.
#pragma once

#include <string>
#include <string_view>

namespace gpuobs {

// `s` with every byte or code point a terminal could act on written as a
// visible escape: C0 controls and DEL as \n, \r, \t, \e or \xNN; C1 controls
// (U+0080..U+009F) and bytes that are not valid UTF-8 as \xNN per byte;
// bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069),
// which reorder what the reader sees, as \u{NNNN}. Everything else, valid
// UTF-8 included, is unchanged, so ordinary names print as before.
std::string terminal_safe(std::string_view s);

}  // namespace gpuobs
