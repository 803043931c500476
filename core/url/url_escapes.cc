// url_escapes.cc: percent-encoding rules; see url_escapes.h.
#include "core/url/url_escapes.h"

#include "core/url/url_chars.h"

namespace dedupd {
namespace url_internal {

bool AppendNormalizedEscapes(absl::string_view in, std::string* out) {
  bool changed = false;
  size_t i = 0;
  while (true) {
    const size_t pct = in.find('%', i);
    if (pct == absl::string_view::npos) {
      out->append(in.data() + i, in.size() - i);
      return changed;
    }
    out->append(in.data() + i, pct - i);
    if (in.size() - pct < 3 || !IsHexDigit(in[pct + 1]) || !IsHexDigit(in[pct + 2])) {
      out->push_back('%');  // unreachable after Screen; kept literal
      i = pct + 1;
      continue;
    }
    const unsigned char hi = static_cast<unsigned char>(in[pct + 1]);
    const unsigned char lo = static_cast<unsigned char>(in[pct + 2]);
    const unsigned char c = static_cast<unsigned char>(HexValue(hi) * 16 + HexValue(lo));
    if (IsUnreserved(c)) {
      out->push_back(static_cast<char>(c));
      changed = true;
    } else {
      const char escape[3] = {'%', kUpperHex[c >> 4], kUpperHex[c & 0xF]};
      out->append(escape, 3);
      changed |= hi != static_cast<unsigned char>(escape[1]) ||
                 lo != static_cast<unsigned char>(escape[2]);
    }
    i = pct + 3;
  }
}

void FullyDecode(absl::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && in.size() - i >= 3 && IsHexDigit(in[i + 1]) && IsHexDigit(in[i + 2])) {
      out->push_back(static_cast<char>(HexValue(in[i + 1]) * 16 + HexValue(in[i + 2])));
      i += 2;
    } else {
      out->push_back(in[i]);
    }
  }
}

}  // namespace url_internal
}  // namespace dedupd
