// url_normalizer_test.cc: the canonical form, rule by rule (table-driven),
// per-host policy, and the idempotence invariant N(N(x)) == N(x) over a
// generated corpus.
#include "core/url/url_normalizer.h"

#include <boost/url/parse.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {

// Turns off the hand-written parser for absolute URLs, so that tests can
// compare it with Boost.URL parsing everything.
class UrlNormalizerTestPeer {
 public:
  static void UseBoostOnly(UrlNormalizer* n) { n->fast_parse_ = false; }
};

namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;
using namespace std::string_literals;  // NOLINT: "a\0b"s keeps the NUL
namespace r = url_rules;

// One row: `input` (resolved against `base` when non-empty) normalizes to
// `want`, or fails with InvalidArgument whose message contains `error`.
// When `rules` is set, the fired rules must be exactly these, in order.
struct Case {
  std::string input;
  std::string base;
  std::string want;
  std::string error;
  std::optional<std::vector<absl::string_view>> rules;
};

Case Ok(std::string in, std::string want) { return {in, "", want, "", {}}; }
Case Ok(std::string in, std::string want, std::vector<absl::string_view> rules) {
  return {in, "", want, "", rules};
}
Case OkB(std::string in, std::string base, std::string want) { return {in, base, want, "", {}}; }
Case OkB(std::string in, std::string base, std::string want, std::vector<absl::string_view> rules) {
  return {in, base, want, "", rules};
}
Case Err(std::string in, std::string error) { return {in, "", "", error, {}}; }
Case ErrB(std::string in, std::string base, std::string error) { return {in, base, "", error, {}}; }

std::string Printable(absl::string_view s) {
  if (s.size() > 120) return absl::StrCat(s.substr(0, 120), "...(", s.size(), " bytes)");
  return std::string(s);
}

void RunTable(const UrlNormalizer& n, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("input: ", Printable(c.input), "  base: ", c.base));
    std::vector<absl::string_view> fired;
    const absl::StatusOr<std::string> got = n.Normalize(c.input, c.base, &fired);
    if (c.error.empty()) {
      ASSERT_THAT(got, IsOk());
      EXPECT_EQ(*got, c.want);
      if (c.rules.has_value()) {
        EXPECT_EQ(absl::StrJoin(fired, " "), absl::StrJoin(*c.rules, " "));
      }
    } else {
      EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.error)));
      EXPECT_TRUE(fired.empty()) << "rules reported for a rejected URL: "
                                 << absl::StrJoin(fired, " ");
    }
  }
}

// ---------------------------------------------------------------------------
// The rule table, default policy.

std::vector<Case> DefaultPolicyCases() {
  const std::string kLong(1 << 20, 'a');
  return {
      // Step 1: screening.
      Err("", "URL is empty"),
      Err(" \t\n ", "empty after trimming"),
      Err("http://example.com/" + kLong, "over the limit of 8192 bytes"),
      Err("http://example.com/" + std::string(8192 - 19 + 1, 'a'), "8193 bytes"),
      Ok("http://example.com/" + std::string(8192 - 19, 'a'),
         "http://example.com/" + std::string(8192 - 19, 'a')),
      Err("http://example.com/\xff", "not valid UTF-8 (byte offset 19)"),
      Err("http://example.com/\xc3\x28", "not valid UTF-8 (byte offset 19)"),
      Err("http://example.com/\xc0\xaf", "not valid UTF-8"),      // overlong
      Err("http://example.com/\xed\xa0\x80", "not valid UTF-8"),  // surrogate
      Err("http://example.com/\xf4\x90\x80\x80",
          "not valid UTF-8"),                                 // > U+10FFFF
      Err("http://example.com/\xe2\x82", "not valid UTF-8"),  // truncated
      Err("http://exa\xffmple.com/", "byte offset 10"),
      Err("http://example.com/a\0b"s, "NUL byte (byte offset 20)"),
      Err("http://example.com/\0"s, "NUL byte (byte offset 19)"),
      Err("\0http://example.com/"s, "NUL byte (byte offset 0)"),
      Err("http://example.com/\x01"
          "a",
          "control character 0x01 (byte offset 19)"),
      Err("http://example.com/a\x7f/", "control character 0x7F"),
      Err("http://example.com/#\x1b!",
          "control character 0x1B"),  // even in the fragment
      Ok("http://example.com/\x01", "http://example.com/", {r::kWhitespaceTrimmed}),
      Ok("  http://example.com/a  ", "http://example.com/a", {r::kWhitespaceTrimmed}),
      Ok("\x01\x1f http://example.com/a\x0b"s, "http://example.com/a", {r::kWhitespaceTrimmed}),
      // A NUL is never trimmed, so the controls before it are inside.
      Err("\x01\x1f http://example.com/a\x0b\x00"s, "control character 0x0B (byte offset 23)"),
      Ok("http://exam\tple.com/a\r\nb", "http://example.com/ab", {r::kWhitespaceTrimmed}),
      Ok("\nhttp://example.com/\n", "http://example.com/", {r::kWhitespaceTrimmed}),

      // Step 2: percent-encoding what cannot appear in a URI; parsing.
      Ok("http://example.com/a b", "http://example.com/a%20b", {r::kCharactersPercentEncoded}),
      Ok("http://example.com/caf\xc3\xa9", "http://example.com/caf%C3%A9",
         {r::kCharactersPercentEncoded}),
      Ok("http://example.com/\"<>\\^`{|}", "http://example.com/%22%3C%3E%5C%5E%60%7B%7C%7D"),
      Ok("http://example.com/a[1]?b[]=2", "http://example.com/a%5B1%5D?b%5B%5D=2",
         {r::kCharactersPercentEncoded}),
      Ok("http://example.com/100%", "http://example.com/100%25"),
      Ok("http://example.com/%zz%4", "http://example.com/%25zz%254"),
      Ok("http://example.com/?q=\xe6\x97\xa5\xe6\x9c\xac",
         "http://example.com/?q=%E6%97%A5%E6%9C%AC"),
      Ok("http://example.com/\xc2\x85",
         "http://example.com/%C2%85"),  // C1 control
      Err("http://exa mple.com/", "invalid character ' ' in host"),
      Err("http://ex@mple@x.com/", "invalid authority"),
      Err("http://a.com:80:80/", "port is not a number"),
      Err("http://[::1/", "not a valid URI reference"),
      Err("http://a.com:8080x/", "port is not a number"),
      Err("http://a.com:abc/", "port is not a number"),
      Err("http://[::1]x/", "invalid authority"),
      Err("\xef\xbf\xbd\xff", "not valid UTF-8"),
      Err("%%%%", "relative URL and no base URL"),
      Err("\x80\x81\x82", "not valid UTF-8 (byte offset 0)"),

      // Resolution against a base (RFC 3986 §5.2, examples from §5.4).
      OkB("g", "http://a/b/c/d;p?q", "http://a/b/c/g", {r::kResolvedAgainstBase}),
      OkB("./g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
      OkB("g/", "http://a/b/c/d;p?q", "http://a/b/c/g"),
      OkB("/g", "http://a/b/c/d;p?q", "http://a/g"),
      OkB("//g", "http://a/b/c/d;p?q", "http://g/"),
      OkB("?y", "http://a/b/c/d;p?q", "http://a/b/c/d;p?y"),
      OkB("g?y", "http://a/b/c/d;p?q", "http://a/b/c/g?y"),
      OkB("#s", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q",
          {r::kResolvedAgainstBase, r::kFragmentDropped}),
      ErrB("", "http://a/b/c/d;p?q", "URL is empty"),
      OkB(".", "http://a/b/c/d;p?q", "http://a/b/c"),
      OkB("..", "http://a/b/c/d;p?q", "http://a/b"),
      OkB("../g", "http://a/b/c/d;p?q", "http://a/b/g"),
      OkB("../../../g", "http://a/b/c/d;p?q", "http://a/g"),
      OkB("/./g", "http://a/b/c/d;p?q", "http://a/g"),
      OkB("g;x=1/../y", "http://a/b/c/d;p?q", "http://a/b/c/y"),
      OkB("https://other.org/x", "http://a/b", "https://other.org/x", {}),
      OkB("x", "HTTPS://Ex.COM:443/dir/page.html#frag", "https://ex.com/dir/x"),
      OkB("x y", "http://a.com/d/", "http://a.com/d/x%20y"),
      OkB("b", "http://a.com", "http://a.com/b"),
      OkB("c", "  http://a.com/a/b\t", "http://a.com/a/c", {r::kResolvedAgainstBase}),
      OkB("//10.0.0.1:8080/p", "https://a.com/", "https://10.0.0.1:8080/p"),
      OkB("/p", "http://1.2.3.4.example/x", "http://1.2.3.4.example/p"),
      Err("/relative/path", "relative URL and no base URL"),
      Err("//example.com/x", "relative URL and no base URL"),
      Err("#top", "relative URL and no base URL"),
      ErrB("g", "mailto:a@b.com", "base URL: scheme 'mailto' is not http or https"),
      ErrB("g", "/relative/base", "base URL: not an absolute URI"),
      ErrB("g", "http://a.com/\xff", "base URL is not valid UTF-8"),
      ErrB("g", "http://a.com/\x01/", "base URL contains control character"),
      ErrB("http://ok.com/", "ftp://a.com/", "base URL: scheme 'ftp'"),
      ErrB("g", " ", "base URL is empty after trimming"),
      ErrB("g", "http://", "missing host"),
      ErrB("g", "http:path", "missing host"),

      // Step 3: scheme.
      Ok("HTTP://example.com/", "http://example.com/", {r::kSchemeLowercased}),
      Ok("HtTpS://example.com/", "https://example.com/", {r::kSchemeLowercased}),
      Err("javascript:alert(1)", "scheme 'javascript' is not http or https"),
      Err("JavaScript:void(0)", "scheme 'javascript' is not http or https"),
      Err("mailto:someone@example.com", "scheme 'mailto' is not http or https"),
      Err("file:///etc/passwd", "scheme 'file' is not http or https"),
      Err("data:text/html,<b>hi</b>", "scheme 'data' is not http or https"),
      Err("ftp://example.com/file", "scheme 'ftp' is not http or https"),
      Err("ws://example.com/", "scheme 'ws'"),
      Err("httpx://example.com/", "scheme 'httpx'"),
      Err("tel:+123", "scheme 'tel'"),

      // Step 4: userinfo, host.
      Ok("http://user:pass@example.com/", "http://example.com/", {r::kUserinfoDropped}),
      Ok("http://@example.com/", "http://example.com/", {r::kUserinfoDropped}),
      Ok("http://u%20x@example.com/", "http://example.com/"),
      Err("http:///path", "missing host"),
      Err("http://user@/path", "missing host"),
      Err("http:example.com", "missing host"),
      Err("http:/example.com/", "missing host"),
      Err("http://:80/", "missing host"),
      Ok("http://WWW.Example.COM/Path", "http://www.example.com/Path", {r::kHostLowercased}),
      Ok("http://example.com./", "http://example.com/", {r::kHostTrailingDotDropped}),
      Err("http://example.com../", "empty label"),
      Err("http://a..b.com/", "empty label"),
      Err("http://.example.com/", "empty label"),
      Err("http://./", "empty label"),
      Ok("http://ex%41mple.com/", "http://example.com/",
         {r::kPercentEncodingNormalized, r::kHostLowercased}),
      Ok("http://my_host.example.com/", "http://my_host.example.com/", {}),
      Ok("http://a-b.example.com/", "http://a-b.example.com/"),
      Err("http://a!b.com/", "invalid character '!' in host"),
      Err("http://a$b.com/", "invalid character '$' in host"),
      Err("http://a%00b.com/", "invalid character '\\x00' in host"),
      Err("http://a%2Fb.com/", "invalid character '/' in host"),
      Err("http://%C3.com/", "percent-decoded host is not valid UTF-8"),
      Err("http://%C3%28.com/", "invalid character '(' in host"),
      Ok("http://b\xc3\xbc"
         "cher.de/",
         "http://xn--bcher-kva.de/", {r::kCharactersPercentEncoded, r::kHostIdnaToAscii}),
      Ok("http://B\xc3\x9c"
         "CHER.DE/",
         "http://xn--bcher-kva.de/"),
      Ok("http://b%C3%BCcher.de/", "http://xn--bcher-kva.de/", {r::kHostIdnaToAscii}),
      Ok("http://XN--BCHER-KVA.de/", "http://xn--bcher-kva.de/", {r::kHostLowercased}),
      Ok("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/", {}),
      Ok("http://fa\xc3\x9f.de/",
         "http://xn--fa-hia.de/"),  // non-transitional: ß kept
      Ok("http://\xe4\xbe\x8b\xe3\x81\x88.jp/", "http://xn--r8jz45g.jp/"),
      Ok("http://"
         "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xbc\xd0\xb5\xd1\x80.\xd1\x80\xd1\x84/",
         "http://xn--e1afmkfd.xn--p1ai/"),
      Ok("http://\xef\xbd\x85xample.com/",
         "http://example.com/"),  // fullwidth e
      Ok("http://example.com\xe3\x80\x82/",
         "http://example.com/"),  // ideographic dot
      Ok("http://\xc2\xad"
         "abc.com/",
         "http://abc.com/"),  // soft hyphen maps to nothing
      Err("http://xn--a.com/", "IDNA"),
      Err("http://xn--.com/", "IDNA"),
      Err("http://a\xe2\x80\x8d"
          "b.com/",
          "IDNA: string contains a forbidden context-j"),
      Err("http://\xf0\x9f\x92\xa9.la/", "IDNA: string contains a disallowed character"),
      Err("http://-x.b\xc3\xbc"
          "cher.de/",
          "IDNA"),
      Err("http://" + std::string(64, 'a') + ".com/", "label of 64 bytes"),
      Ok("http://" + std::string(63, 'a') + ".com/", "http://" + std::string(63, 'a') + ".com/"),
      Err("http://" + std::string(63, 'a') + "." + std::string(63, 'b') + "." +
              std::string(63, 'c') + "." + std::string(63, 'd') + ".com/",
          "host is 259 bytes"),
      Ok("http://" + std::string(63, 'a') + "." + std::string(63, 'b') + "." +
             std::string(63, 'c') + "." + std::string(61, 'd') + "/",
         "http://" + std::string(63, 'a') + "." + std::string(63, 'b') + "." +
             std::string(63, 'c') + "." + std::string(61, 'd') + "/"),
      Err("http://" + absl::StrJoin(std::vector<std::string>(64, "abc"), ".") + "/",
          "over the limit of 253"),

      // Step 4: IPv4 in every WHATWG form.
      Ok("http://127.0.0.1/", "http://127.0.0.1/", {}),
      Ok("http://0x7f.1/", "http://127.0.0.1/", {r::kIpv4Canonicalized}),
      Ok("http://2130706433/", "http://127.0.0.1/", {r::kIpv4Canonicalized}),
      Ok("http://0177.0.0.1/", "http://127.0.0.1/"),
      Ok("http://0x7F.0.0.0x1/", "http://127.0.0.1/"),
      Ok("http://127.1/", "http://127.0.0.1/"),
      Ok("http://127.0.1/", "http://127.0.0.1/"),
      Ok("http://0x7f000001/", "http://127.0.0.1/"),
      Ok("http://017700000001/", "http://127.0.0.1/"),
      Ok("http://0/", "http://0.0.0.0/"),
      Ok("http://0x/", "http://0.0.0.0/"),
      Ok("http://4294967295/", "http://255.255.255.255/"),
      Ok("http://192.168.0.1./", "http://192.168.0.1/", {r::kHostTrailingDotDropped}),
      Ok("http://1.2.3.4.example/", "http://1.2.3.4.example/", {}),
      Ok("http://1.2.3.4x/", "http://1.2.3.4x/"),
      Ok("http://u@8.8.8.8:53/", "http://8.8.8.8:53/", {r::kUserinfoDropped}),
      Ok("http://\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1/", "http://127.0.0.1/"),
      Err("http://4294967296/", "IPv4 address out of range"),
      Err("http://256.0.0.1/", "IPv4 address part out of range"),
      Err("http://1.256.0.0.1/", "more than 4 parts"),
      Err("http://1.2.3.4.5/", "more than 4 parts"),
      Err("http://1.2.65536/", "IPv4 address out of range"),
      Err("http://09.1/", "IPv4 part '09' is not a number"),
      Err("http://example.123/", "IPv4 part 'example' is not a number"),
      Err("http://1..2/", "empty part"),
      Err("http://0xg.1/", "IPv4 part"),

      // Step 4: IPv6 literals, RFC 5952.
      Ok("http://[::1]/", "http://[::1]/", {}),
      Ok("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/", {r::kIpv6Canonicalized}),
      Ok("http://[2001:DB8::1]/", "http://[2001:db8::1]/", {r::kIpv6Canonicalized}),
      Ok("http://[2001:0db8:0000:0000:0000:0000:0000:0001]:8080/", "http://[2001:db8::1]:8080/"),
      Ok("http://[2001:db8:0:1:0:0:0:1]/", "http://[2001:db8:0:1::1]/"),
      Ok("http://[2001:db8:0:0:1:0:0:1]/",
         "http://[2001:db8::1:0:0:1]/"),  // first run on a tie
      Ok("http://[2001:db8::1:0:1:1:1]/",
         "http://[2001:db8:0:1:0:1:1:1]/"),  // no "::" for one field
      Ok("http://[::]/", "http://[::]/"),
      Ok("http://[::FFFF:192.0.2.1]/", "http://[::ffff:192.0.2.1]/"),
      Ok("http://[::ffff:c000:0201]/", "http://[::ffff:192.0.2.1]/"),
      Ok("http://user@[::1]:80/", "http://[::1]/"),
      Err("http://[v1.fe]/", "IPvFuture address '[v1.fe]' is not supported"),
      Err("http://[1:2:3]/", "not a valid URI reference"),
      Err("http://[fe80::1%25eth0]/", "not a valid URI reference"),

      // Step 5: port.
      Ok("http://example.com:80/", "http://example.com/", {r::kDefaultPortDropped}),
      Ok("https://example.com:443/", "https://example.com/", {r::kDefaultPortDropped}),
      Ok("http://example.com:443/", "http://example.com:443/", {}),
      Ok("https://example.com:80/", "https://example.com:80/"),
      Ok("http://example.com:8080/", "http://example.com:8080/"),
      Ok("http://example.com:/", "http://example.com/", {r::kEmptyPortDropped}),
      Ok("http://example.com:0080/", "http://example.com/", {r::kDefaultPortDropped}),
      Ok("http://example.com:08080/", "http://example.com:8080/", {r::kPortLeadingZerosDropped}),
      Ok("http://example.com:0/", "http://example.com:0/"),
      Ok("http://example.com:000/", "http://example.com:0/"),
      Ok("http://example.com:65535/", "http://example.com:65535/"),
      Err("http://example.com:65536/", "port '65536' is out of range (max 65535)"),
      Err("http://example.com:99999999999999999999/", "out of range"),
      Ok("http://example.com:0000000000000000000081/", "http://example.com:81/"),

      // Step 6: path.
      Ok("http://example.com", "http://example.com/", {r::kEmptyPathSetToSlash}),
      Ok("http://example.com?a=1", "http://example.com/?a=1"),
      Ok("http://example.com/%7euser/%7Efile", "http://example.com/~user/~file",
         {r::kPercentEncodingNormalized}),
      Ok("http://example.com/a%2fb%c3%a9", "http://example.com/a%2Fb%C3%A9"),
      Ok("http://example.com/%41%42%2D%2E%5F%7E", "http://example.com/AB-._~"),
      Ok("http://example.com/%20%21%3B", "http://example.com/%20%21%3B", {}),
      Ok("http://example.com/a/./b/../c", "http://example.com/a/c", {r::kDotSegmentsRemoved}),
      Ok("http://example.com/../../a", "http://example.com/a"),
      Ok("http://example.com/a/%2e%2E/b", "http://example.com/b",
         {r::kPercentEncodingNormalized, r::kDotSegmentsRemoved}),
      Ok("http://example.com/a/%2e/b", "http://example.com/a/b"),
      Ok("http://example.com/a/..", "http://example.com/", {r::kDotSegmentsRemoved}),
      Ok("http://example.com/a/.../b", "http://example.com/a/.../b", {}),
      Ok("http://example.com/a/.b/..c", "http://example.com/a/.b/..c"),
      Ok("http://example.com/a;jsessionid=0123ABC", "http://example.com/a",
         {r::kPathSessionIdDropped}),
      Ok("http://example.com/a;JSESSIONID=x/b;jsessionid=y?q=1", "http://example.com/a/b?q=1"),
      Ok("http://example.com/a;v=1;jsessionid=x;w=2", "http://example.com/a;v=1;w=2"),
      Ok("http://example.com/a/..;jsessionid=1/b", "http://example.com/b",
         {r::kPathSessionIdDropped, r::kDotSegmentsRemoved}),
      Ok("http://example.com/a;%6Asessionid=1", "http://example.com/a"),
      Ok("http://example.com/a%3Bjsessionid=1", "http://example.com/a%3Bjsessionid=1"),
      Ok("http://example.com/a;jsessionidx=1", "http://example.com/a;jsessionidx=1"),
      Ok("http://example.com/a/", "http://example.com/a", {r::kTrailingSlashStripped}),
      Ok("http://example.com/a///", "http://example.com/a"),
      Ok("http://example.com///", "http://example.com/"),
      Ok("http://example.com/", "http://example.com/", {}),
      Ok("http://example.com//a//b", "http://example.com//a//b"),
      Ok("http://example.com/a/b/.", "http://example.com/a/b",
         {r::kDotSegmentsRemoved, r::kTrailingSlashStripped}),
      Ok("http://example.com/CaSe/Path", "http://example.com/CaSe/Path"),
      Ok("http://example.com/a:b@c!$&'()*+,;=", "http://example.com/a:b@c!$&'()*+,;="),

      // Step 7: query.
      Ok("http://example.com/?utm_source=a&utm_medium=b&id=1", "http://example.com/?id=1",
         {r::kTrackingParamsDropped}),
      Ok("http://example.com/?UTM_Source=a&id=1", "http://example.com/?id=1"),
      Ok("http://example.com/?pk_campaign=x&hsa_acc=1&mtm_kwd=2&k=v", "http://example.com/?k=v"),
      Ok("http://example.com/"
         "?gclid=1&gclsrc=2&dclid=3&gbraid=4&wbraid=5&fbclid=6"
         "&msclkid=7&mc_cid=8&mc_eid=9&_ga=10&_gl=11&igshid=12&yclid=13&twclid="
         "14"
         "&ttclid=15&li_fat_id=16&_hsenc=17&_hsmi=18&mkt_tok=19&oly_anon_id=20"
         "&oly_enc_id=21&vero_id=22&wickedid=23&rb_clickid=24&s_cid=25&srsltid="
         "26&x=1",
         "http://example.com/?x=1", {r::kTrackingParamsDropped}),
      Ok("http://example.com/?FBCLID=1&x=1", "http://example.com/?x=1"),
      Ok("http://example.com/?utm=1&gclidx=2&my_utm_source=3",
         "http://example.com/?gclidx=2&my_utm_source=3&utm=1"),
      Ok("http://example.com/?%75tm_source=a&%5Fga=b&x=1", "http://example.com/?x=1"),
      Ok("http://example.com/?utm_source&x=1", "http://example.com/?x=1"),
      Ok("http://example.com/?jsessionid=1&PHPSESSID=2&sid=3&sessionid=4"
         "&session_id=5&ASPSESSIONIDQQGGQGPA=6&cfid=7&CFTOKEN=8&page=2",
         "http://example.com/?page=2", {r::kSessionParamsDropped}),
      Ok("http://example.com/?sidebar=1&side=2", "http://example.com/?side=2&sidebar=1"),
      Ok("http://example.com/?utm_source=1&sid=2&b=1&a=2", "http://example.com/?a=2&b=1",
         {r::kTrackingParamsDropped, r::kSessionParamsDropped, r::kParamsSorted}),
      Ok("http://example.com/?a=1&&b=2&", "http://example.com/?a=1&b=2", {r::kEmptyParamsDropped}),
      Ok("http://example.com/?", "http://example.com/", {r::kEmptyQueryDropped}),
      Ok("http://example.com/?&&", "http://example.com/",
         {r::kEmptyParamsDropped, r::kEmptyQueryDropped}),
      Ok("http://example.com/?utm_source=x", "http://example.com/",
         {r::kTrackingParamsDropped, r::kEmptyQueryDropped}),
      Ok("http://example.com/?b=2&a=1&c=3", "http://example.com/?a=1&b=2&c=3", {r::kParamsSorted}),
      Ok("http://example.com/?a=2&b=1&a=1",
         "http://example.com/?a=2&a=1&b=1"),  // stable
      Ok("http://example.com/?a=1&a", "http://example.com/?a=1&a"),
      Ok("http://example.com/?b&a=", "http://example.com/?a=&b"),
      Ok("http://example.com/?b=1&B=2&_=3&1=4", "http://example.com/?1=4&B=2&_=3&b=1"),
      Ok("http://example.com/?ab=1&a=2", "http://example.com/?a=2&ab=1"),
      Ok("http://example.com/?a%62=1&ab=2&a%3D=3", "http://example.com/?a%3D=3&ab=1&ab=2"),
      Ok("http://example.com/?q=a+b&q2=%2b", "http://example.com/?q=a+b&q2=%2B"),
      Ok("http://example.com/?k=a%26b%3dc", "http://example.com/?k=a%26b%3Dc",
         {r::kPercentEncodingNormalized}),
      Ok("http://example.com/?%7a=%7e", "http://example.com/?z=~"),
      Ok("http://example.com/?%5a=1&Y=2", "http://example.com/?Y=2&Z=1"),
      Ok("http://example.com/?q=/path?x", "http://example.com/?q=/path?x"),
      Ok("http://example.com/?q=%zz", "http://example.com/?q=%25zz"),

      // Step 8: fragment.
      Ok("http://example.com/a#top", "http://example.com/a", {r::kFragmentDropped}),
      Ok("http://example.com/a#", "http://example.com/a", {r::kFragmentDropped}),
      Ok("http://example.com/#!/route#x y", "http://example.com/"),
      Ok("http://example.com/?a=1#b=2", "http://example.com/?a=1"),

      // Everything at once (the header's example).
      Ok("HTTP://Example.COM:80/a/./b/?utm_source=x&b=2&a=1#top", "http://example.com/a/b?a=1&b=2",
         {r::kSchemeLowercased, r::kHostLowercased, r::kDefaultPortDropped, r::kDotSegmentsRemoved,
          r::kTrailingSlashStripped, r::kTrackingParamsDropped, r::kParamsSorted,
          r::kFragmentDropped}),
      Ok(" https://user@WWW.B\xc3\xbc"
         "cher.DE.:0443/%7Ea/../b/;jsessionid=9/?"
         "sid=1&z=%7a&utm_x=2&&a#f",
         "https://www.xn--bcher-kva.de/b?a&z=z",
         {r::kWhitespaceTrimmed, r::kCharactersPercentEncoded, r::kUserinfoDropped,
          r::kHostLowercased, r::kHostIdnaToAscii, r::kHostTrailingDotDropped,
          r::kDefaultPortDropped, r::kPercentEncodingNormalized, r::kPathSessionIdDropped,
          r::kDotSegmentsRemoved, r::kTrailingSlashStripped, r::kTrackingParamsDropped,
          r::kSessionParamsDropped, r::kEmptyParamsDropped, r::kParamsSorted, r::kFragmentDropped}),
  };
}

TEST(UrlNormalizerTest, DefaultPolicyTable) {
  const std::vector<Case> cases = DefaultPolicyCases();
  EXPECT_GE(cases.size(), 150u);
  RunTable(UrlNormalizer(), cases);
}

// ---------------------------------------------------------------------------
// Per-host policy.

UrlPolicy TestPolicy() {
  std::vector<HostRule> rules(6);
  rules[0].hosts = {"shop.example"};
  rules[0].allow_params = {"id", "page", "filter[color]"};
  rules[1].hosts = {"*.blog.example"};
  rules[1].trailing_slash = TrailingSlash::kAdd;
  rules[1].drop_params = {"Ref", "source"};
  rules[2].hosts = {"keep.example", "127.0.0.1"};
  rules[2].trailing_slash = TrailingSlash::kKeep;
  rules[3].hosts = {"*.iis.example"};
  rules[3].case_insensitive_path = true;
  rules[4].hosts = {"www.blog.example"};  // exact beats *.blog.example
  rules[4].trailing_slash = TrailingSlash::kKeep;
  rules[5].hosts = {"*.deep.blog.example"};  // longer suffix wins
  rules[5].allow_params = {"q"};
  absl::StatusOr<UrlPolicy> policy = UrlPolicy::Create(rules, {"Campaign"});
  EXPECT_THAT(policy, IsOk());
  return policy.ok() ? *std::move(policy) : UrlPolicy();
}

std::vector<Case> PolicyCases() {
  return {
      // Allowlist: only listed keys (exact, case-sensitive, decoded) survive.
      Ok("http://shop.example/item?id=7&color=red&page=2&sort=asc",
         "http://shop.example/item?id=7&page=2", {r::kParamsNotAllowlistedDropped}),
      Ok("http://shop.example/item?ID=7&Page=2", "http://shop.example/item",
         {r::kParamsNotAllowlistedDropped, r::kEmptyQueryDropped}),
      Ok("http://shop.example/item?i%64=7", "http://shop.example/item?id=7",
         {r::kPercentEncodingNormalized}),
      // Decisions use the fully decoded key; the output keeps the escapes.
      Ok("http://shop.example/c?filter[color]=red&filter[size]=9",
         "http://shop.example/c?filter%5Bcolor%5D=red",
         {r::kCharactersPercentEncoded, r::kParamsNotAllowlistedDropped}),
      Ok("http://shop.example/c?filter%5bcolor%5d=red",
         "http://shop.example/c?filter%5Bcolor%5D=red"),
      Ok("http://shop.example/item?utm_source=x&id=1", "http://shop.example/item?id=1",
         {r::kTrackingParamsDropped}),
      Ok("http://www.shop.example/item?color=red", "http://www.shop.example/item?color=red"),
      Ok("http://SHOP.example/item?color=red", "http://shop.example/item"),
      // Global drop_params (case-insensitive) on every host.
      Ok("http://any.example/?campaign=1&CAMPAIGN=2&x=1", "http://any.example/?x=1",
         {r::kPolicyParamsDropped}),
      Ok("http://shop.example/?Campaign=1&id=1", "http://shop.example/?id=1",
         {r::kPolicyParamsDropped}),
      // Host rule drop_params, case-insensitive.
      Ok("http://a.blog.example/post.html?ref=tw&REF=fb&Source=x&p=1",
         "http://a.blog.example/post.html?p=1", {r::kPolicyParamsDropped}),
      Ok("http://other.example/?ref=tw", "http://other.example/?ref=tw"),
      // Trailing slash: add.
      Ok("http://a.blog.example/docs", "http://a.blog.example/docs/", {r::kTrailingSlashAdded}),
      Ok("http://blog.example/docs/intro", "http://blog.example/docs/intro/"),
      Ok("http://a.blog.example/docs/", "http://a.blog.example/docs/", {}),
      Ok("http://a.blog.example/file.html", "http://a.blog.example/file.html", {}),
      Ok("http://a.blog.example/v1.2/api", "http://a.blog.example/v1.2/api/"),
      Ok("http://a.blog.example", "http://a.blog.example/", {r::kEmptyPathSetToSlash}),
      Ok("http://a.blog.example/a/..", "http://a.blog.example/"),
      Ok("http://a.blog.example/a/b/..", "http://a.blog.example/a/"),
      Ok("http://a.blog.example/a/%2E%2E", "http://a.blog.example/"),
      // Trailing slash: keep.
      Ok("http://keep.example/a/", "http://keep.example/a/", {}),
      Ok("http://keep.example/a", "http://keep.example/a"),
      Ok("http://keep.example/a//", "http://keep.example/a//"),
      Ok("http://0x7f.1/a/",
         "http://127.0.0.1/a/"),  // rule found after IPv4 canonicalization
      // Exact name beats the pattern; longest pattern wins.
      Ok("http://www.blog.example/docs", "http://www.blog.example/docs"),
      Ok("http://www.blog.example/docs/", "http://www.blog.example/docs/"),
      Ok("http://x.deep.blog.example/docs/?q=1&ref=2", "http://x.deep.blog.example/docs?q=1",
         {r::kTrailingSlashStripped, r::kParamsNotAllowlistedDropped}),
      Ok("http://deep.blog.example/a?z=1&q=2", "http://deep.blog.example/a?q=2"),
      // Case-insensitive path: lowercase, but never the hex of an escape.
      Ok("http://www.iis.example/Default.ASPX?Q=A", "http://www.iis.example/default.aspx?Q=A",
         {r::kPathLowercased}),
      Ok("http://iis.example/A%2fB%c3%89", "http://iis.example/a%2Fb%C3%89",
         {r::kPercentEncodingNormalized, r::kPathLowercased}),
      Ok("http://iis.example/%41bc", "http://iis.example/abc"),
      Ok("http://iis.example/A/", "http://iis.example/a",
         {r::kPathLowercased, r::kTrailingSlashStripped}),
      Ok("http://iis.example/a;JSESSIONID=X/B", "http://iis.example/a/b"),
      Ok("http://notiis.example/A", "http://notiis.example/A"),
      // The host decides the rule after IDNA and lowercasing.
      Ok("HTTP://SHOP.EXAMPLE./?color=1&id=2", "http://shop.example/?id=2"),
  };
}

TEST(UrlNormalizerTest, PolicyTable) {
  const std::vector<Case> cases = PolicyCases();
  EXPECT_GE(cases.size(), 30u);
  RunTable(UrlNormalizer(TestPolicy()), cases);
}

TEST(UrlNormalizerTest, PolicyAccessorReturnsThePolicy) {
  const UrlNormalizer n(TestPolicy());
  EXPECT_NE(n.policy().Find("shop.example"), nullptr);
  EXPECT_EQ(UrlNormalizer().policy().Find("shop.example"), nullptr);
}

// ---------------------------------------------------------------------------
// Fixed points.

// Every expected output of the tables is its own canonical form.
TEST(UrlNormalizerTest, ExpectedOutputsAreFixedPoints) {
  const UrlNormalizer plain;
  const UrlNormalizer with_policy(TestPolicy());
  size_t checked = 0;
  for (const auto& [n, cases] :
       {std::pair<const UrlNormalizer*, std::vector<Case>>{&plain, DefaultPolicyCases()},
        std::pair<const UrlNormalizer*, std::vector<Case>>{&with_policy, PolicyCases()}}) {
    for (const Case& c : cases) {
      if (c.want.empty()) continue;
      SCOPED_TRACE(Printable(c.want));
      std::vector<absl::string_view> fired;
      const absl::StatusOr<std::string> again = n->Normalize(c.want, "", &fired);
      ASSERT_THAT(again, IsOk());
      EXPECT_EQ(*again, c.want);
      EXPECT_TRUE(fired.empty()) << absl::StrJoin(fired, " ");
      ++checked;
    }
  }
  EXPECT_GE(checked, 150u);
}

TEST(UrlNormalizerTest, FiredIsAppendedToAndNotClearedOnSuccess) {
  const UrlNormalizer n;
  std::vector<absl::string_view> fired = {"earlier"};
  ASSERT_THAT(n.Normalize("HTTP://a.com/", "", &fired), IsOk());
  EXPECT_THAT(fired, ::testing::ElementsAre("earlier", r::kSchemeLowercased));
  ASSERT_THAT(n.Normalize("HTTP://a.com/x y", "", &fired),
              IsOk());  // the same rule twice in one list is fine across calls
  EXPECT_EQ(fired.size(), 4u);
  EXPECT_THAT(n.Normalize("HTTP://a.com:99999/", "", &fired),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(fired.size(), 4u);  // a rejected URL reports nothing
}

TEST(UrlNormalizerTest, NullFiredIsAccepted) {
  const UrlNormalizer n;
  ASSERT_OK_AND_ASSIGN(std::string got, n.Normalize("HTTP://a.com/?utm_x=1"));
  EXPECT_EQ(got, "http://a.com/");
}

// ---------------------------------------------------------------------------
// Idempotence over a generated corpus.

// UrlGenerator makes URL-like strings that mix every feature the normalizer
// handles, plus random damage. Deterministic: a fixed seed gives a fixed
// corpus on every platform (mt19937_64 is fully specified; we avoid
// std::uniform_int_distribution, whose output is implementation-defined).
class UrlGenerator {
 public:
  explicit UrlGenerator(uint64_t seed) : rng_(seed) {}

  // Returns {url, base}; base is empty for most absolute URLs.
  std::pair<std::string, std::string> Next() {
    std::string url;
    std::string base;
    if (Chance(15)) {
      base = Pick(kBases);
      url = Pick(kRelative);
      if (Chance(50)) url += Path();
    } else {
      if (Chance(5)) base = Pick(kBases);
      url = Chance(90) ? Pick(kSchemes) : Pick(kBadSchemes);
      if (Chance(15)) url += Pick(kUserinfo);
      url += Host();
      if (Chance(25)) url += Pick(kPorts);
      url += Path();
    }
    if (Chance(60)) url += Query();
    if (Chance(15)) url += Pick(kFragments);
    if (Chance(10)) url = Pick(kSpace) + url + Pick(kSpace);
    const int damage = Chance(12) ? static_cast<int>(Below(4)) + 1 : 0;
    for (int i = 0; i < damage; ++i) Damage(&url);
    return {url, base};
  }

 private:
  static constexpr const char* kSchemes[] = {"http://", "https://", "HTTP://", "HtTpS://"};
  static constexpr const char* kBadSchemes[] = {"http:/",  "http:",       "ftp://",
                                                "mailto:", "javascript:", "//",
                                                "file://", "data:,",      "http:\\\\"};
  static constexpr const char* kUserinfo[] = {"user@", "u:p@", "@", "a%40b:c@", "us er@"};
  static constexpr const char* kHosts[] = {"example.com",
                                           "EXAMPLE.com",
                                           "www.Example.COM.",
                                           "shop.example",
                                           "a.blog.example",
                                           "www.blog.example",
                                           "x.deep.blog.example",
                                           "www.iis.example",
                                           "keep.example",
                                           "b\xc3\xbc"
                                           "cher.de",
                                           "B\xc3\x9c"
                                           "CHER.de",
                                           "xn--bcher-kva.de",
                                           "XN--BCHER-KVA.DE",
                                           "fa\xc3\x9f.de",
                                           "\xe4\xbe\x8b\xe3\x81\x88.jp",
                                           "\xef\xbd\x85xample.com",
                                           "example.com\xe3\x80\x82",
                                           "127.0.0.1",
                                           "0x7f.1",
                                           "2130706433",
                                           "0177.0.0.1",
                                           "1.2.3.4.com",
                                           "10.1",
                                           "[::1]",
                                           "[0:0:0:0:0:0:0:1]",
                                           "[::FFFF:1.2.3.4]",
                                           "[2001:DB8:0:0:1:0:0:1]",
                                           "%65xample.com",
                                           "a_b.example",
                                           "",
                                           "a..b",
                                           "xn--a.com",
                                           "a\xe2\x80\x8d"
                                           "b.com",
                                           "256.1.1.1",
                                           "my-host",
                                           "h",
                                           "1.2.3.4.5",
                                           "[v1.x]",
                                           "0x",
                                           "09.1"};
  static constexpr const char* kPorts[] = {":80",    ":443", ":8080",  ":0080", ":",
                                           ":65536", ":abc", ":00000", ":1"};
  static constexpr const char* kSegments[] = {"a",
                                              "B",
                                              ".",
                                              "..",
                                              "%2e",
                                              "%2E%2e",
                                              "%7Euser",
                                              "%7e",
                                              "x%2fy",
                                              "\xc3\xa9",
                                              "a b",
                                              ";jsessionid=XYZ",
                                              "file.html",
                                              "",
                                              "%41",
                                              "%zz",
                                              "[x]",
                                              "{y}",
                                              "..;jsessionid=1",
                                              "a;jsessionid=1;b=2",
                                              "Index.ASPX",
                                              "%",
                                              "%2",
                                              "a%2",
                                              "%C3%A9",
                                              "%c3%a9",
                                              ";JSESSIONID=q",
                                              "v1.2",
                                              "~",
                                              "a:b",
                                              "@",
                                              "!$&'()*+,;="};
  static constexpr const char* kKeys[] = {
      "a",          "b",         "A",          "Z",
      "id",         "page",      "q",          "utm_source",
      "UTM_Medium", "gclid",     "fbclid",     "%5Fga",
      "sid",        "PHPSESSID", "jsessionid", "aspsessionidXYZ",
      "ref",        "Ref",       "campaign",   "%61",
      "a+b",        "k%3Dv",     "%7a",        "z",
      "",           "\xc3\xa9",  "i%64",       "%49D",
      "%",          "sort",      "color"};
  static constexpr const char* kValues[] = {"1",   "2",   "x%2Fy", "%7e", "",
                                            "a=b", "%zz", "a+b",   "%2b", "\xc3\xa9",
                                            "a b", "?x",  "/p",    "%26", "%3d"};
  static constexpr const char* kFragments[] = {"#top", "#", "#a b", "#!/x#y", "#%zz"};
  static constexpr const char* kSpace[] = {" ", "\t", "\n", "\x01", "  \r\n"};
  static constexpr const char* kBases[] = {"http://a.com/b/c/d;p?q",
                                           "https://Example.COM:443/dir/page.html#f",
                                           "http://shop.example/",
                                           "http://0x7f.1/a/b/",
                                           "http://[::1]:8080/x",
                                           ("http://b\xc3\xbc"
                                            "cher.de/a b/"),
                                           "ftp://a.com/",
                                           "/relative",
                                           "http://a.com",
                                           " http://a.com/x\t"};
  static constexpr const char* kRelative[] = {
      "",        "g",          "./g",         "../g", "../../../g",     "/g",
      "//g.com", "//G.com:80", "?y=1",        "#s",   "g?utm_source=1", ".",
      "..",      "g;x=1/../y", "//1.2.3.4.x", "\\g",  "%2e%2e/g"};

  template <size_t N>
  std::string Pick(const char* const (&options)[N]) {
    return options[Below(N)];
  }
  uint64_t Below(uint64_t n) { return rng_() % n; }
  bool Chance(int percent) { return Below(100) < static_cast<uint64_t>(percent); }

  std::string Host() {
    if (Chance(3)) return RandomBytes(1 + Below(8));
    if (Chance(10)) return Pick(kHosts) + std::string(".") + Pick(kHosts);
    return Pick(kHosts);
  }

  std::string Path() {
    std::string path;
    const uint64_t n = Below(6);
    for (uint64_t i = 0; i < n; ++i) {
      path += "/";
      path += Chance(5) ? RandomBytes(1 + Below(4)) : Pick(kSegments);
    }
    if (Chance(20)) path += "/";
    return path;
  }

  std::string Query() {
    std::string q = "?";
    const uint64_t n = Below(6);
    for (uint64_t i = 0; i < n; ++i) {
      if (i > 0) q += Chance(10) ? "&&" : "&";
      q += Pick(kKeys);
      if (Chance(85)) {
        q += "=";
        q += Pick(kValues);
      }
    }
    if (Chance(5)) q += "&";
    return q;
  }

  std::string RandomBytes(uint64_t n) {
    std::string s;
    for (uint64_t i = 0; i < n; ++i) s.push_back(static_cast<char>(Below(256)));
    return s;
  }

  void Damage(std::string* s) {
    const uint64_t pos = s->empty() ? 0 : Below(s->size() + 1);
    const char byte = static_cast<char>(Chance(50) ? Below(128) : Below(256));
    switch (Below(3)) {
      case 0:
        s->insert(s->begin() + pos, byte);
        break;
      case 1:
        if (pos < s->size()) (*s)[pos] = byte;
        break;
      default:
        if (pos < s->size()) s->erase(pos, 1);
        break;
    }
  }

  std::mt19937_64 rng_;
};

bool IsAscii(absl::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

TEST(UrlNormalizerTest, IdempotentOverGeneratedCorpus) {
  constexpr int kUrls = 120000;
  const UrlNormalizer plain;
  const UrlNormalizer with_policy(TestPolicy());
  UrlGenerator gen(/*seed=*/0x5eedd3d0u);
  int normalized = 0;
  int rejected = 0;
  int changed = 0;
  std::vector<std::string> failures;
  for (int i = 0; i < kUrls; ++i) {
    const auto [url, base] = gen.Next();
    const UrlNormalizer& n = (i % 4 == 0) ? with_policy : plain;
    const absl::StatusOr<std::string> once = n.Normalize(url, base);
    if (!once.ok()) {
      ++rejected;
      if (once.status().code() != absl::StatusCode::kInvalidArgument) {
        failures.push_back(absl::StrCat("non-InvalidArgument error for '", absl::CHexEscape(url),
                                        "': ", once.status().ToString()));
      }
      continue;
    }
    ++normalized;
    if (*once != url) ++changed;
    std::vector<absl::string_view> fired;
    const absl::StatusOr<std::string> twice = n.Normalize(*once, "", &fired);
    const bool parses =
        boost::urls::parse_uri(boost::urls::string_view(once->data(), once->size())).has_value();
    if (!twice.ok() || *twice != *once || !fired.empty() || !IsAscii(*once) || !parses) {
      failures.push_back(
          absl::StrCat("url '", absl::CHexEscape(url), "' base '", absl::CHexEscape(base), "' -> '",
                       absl::CHexEscape(*once), "' -> ",
                       twice.ok() ? absl::StrCat("'", *twice, "'") : twice.status().ToString(),
                       " fired: ", absl::StrJoin(fired, " "), parses ? "" : " (does not parse)"));
    }
  }
  for (size_t i = 0; i < failures.size() && i < 20; ++i) {
    ADD_FAILURE() << failures[i];
  }
  EXPECT_EQ(failures.size(), 0u);
  // The corpus must exercise both outcomes, or the property proves nothing.
  EXPECT_GT(normalized, kUrls / 3);
  EXPECT_GT(rejected, kUrls / 20);
  EXPECT_GT(changed, kUrls / 4);
}

// The last base is cached per thread; switching bases, a bad base, and an
// absolute URL in between must not leak one base into another call.
TEST(UrlNormalizerTest, BaseCacheNeverLeaksBetweenCalls) {
  const UrlNormalizer n;
  const struct {
    const char* url;
    const char* base;
    const char* want;  // or an error substring when it starts with '!'
  } kCalls[] = {
      {"g", "http://a.com/x/y", "http://a.com/x/g"},
      {"g", "http://a.com/x/y", "http://a.com/x/g"},
      {"g", "https://b.org/p/q", "https://b.org/p/g"},
      {"g", "http://a.com/x/y", "http://a.com/x/g"},
      {"g", "mailto:x@a.com", "!base URL: scheme 'mailto'"},
      {"g", "http://a.com/x/y", "http://a.com/x/g"},
      {"http://c.net/", "http://a.com/x/y", "http://c.net/"},
      {"g", "http://a.com/x/y ", "http://a.com/x/g"},  // trimmed: same base
      {"g", "http://a.com/x/y", "http://a.com/x/g"},
      {"g", "", "!relative URL and no base URL"},
      {"g", "http://1.2.3.4.example/d/", "http://1.2.3.4.example/d/g"},
      {"g", "http://a.com/x/y", "http://a.com/x/g"},
  };
  for (const auto& c : kCalls) {
    SCOPED_TRACE(::testing::Message() << c.url << " against " << c.base);
    const absl::StatusOr<std::string> got = n.Normalize(c.url, c.base);
    if (c.want[0] == '!') {
      EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want + 1)));
    } else {
      ASSERT_THAT(got, IsOk());
      EXPECT_EQ(*got, c.want);
    }
  }
}

// Normalize is const and thread-safe (per-thread scratch buffers): threads
// sharing one normalizer get the results a single thread gets.
TEST(UrlNormalizerTest, ConcurrentCallsAgreeWithSequentialOnes) {
  constexpr int kThreads = 4;
  constexpr int kUrls = 5000;
  const UrlNormalizer n(TestPolicy());
  std::vector<std::pair<std::string, std::string>> inputs;
  UrlGenerator gen(/*seed=*/7);
  for (int i = 0; i < kUrls; ++i) inputs.push_back(gen.Next());
  auto run = [&](std::vector<std::string>* out) {
    for (const auto& [url, base] : inputs) {
      const absl::StatusOr<std::string> got = n.Normalize(url, base);
      out->push_back(got.ok() ? *got : got.status().ToString());
    }
  };
  std::vector<std::string> expected;
  run(&expected);
  std::vector<std::vector<std::string>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(run, &results[t]);
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[t], expected) << t;
}

// The hand-written parser for absolute URLs must be invisible: for every
// input, the result (value or error message) equals the Boost.URL-only one.
TEST(UrlNormalizerTest, FastParserAgreesWithBoostUrl) {
  constexpr int kUrls = 60000;
  const UrlNormalizer fast_plain;
  const UrlNormalizer fast_policy(TestPolicy());
  UrlNormalizer boost_plain;
  UrlNormalizer boost_policy(TestPolicy());
  UrlNormalizerTestPeer::UseBoostOnly(&boost_plain);
  UrlNormalizerTestPeer::UseBoostOnly(&boost_policy);

  std::vector<std::pair<std::string, std::string>> inputs;
  for (const Case& c : DefaultPolicyCases()) inputs.emplace_back(c.input, c.base);
  for (const Case& c : PolicyCases()) inputs.emplace_back(c.input, c.base);
  UrlGenerator gen(/*seed=*/42);
  for (int i = 0; i < kUrls; ++i) inputs.push_back(gen.Next());

  int mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& [url, base] = inputs[i];
    const bool policy = i % 2 == 1;
    std::vector<absl::string_view> fast_rules, boost_rules;
    const absl::StatusOr<std::string> fast =
        (policy ? fast_policy : fast_plain).Normalize(url, base, &fast_rules);
    const absl::StatusOr<std::string> slow =
        (policy ? boost_policy : boost_plain).Normalize(url, base, &boost_rules);
    const std::string fast_text = fast.ok() ? *fast : fast.status().ToString();
    const std::string slow_text = slow.ok() ? *slow : slow.status().ToString();
    if (fast_text != slow_text || fast_rules != boost_rules) {
      if (++mismatches <= 20) {
        ADD_FAILURE() << "'" << absl::CHexEscape(url) << "' base '" << absl::CHexEscape(base)
                      << "': fast " << fast_text << " [" << absl::StrJoin(fast_rules, " ")
                      << "] vs Boost.URL " << slow_text << " [" << absl::StrJoin(boost_rules, " ")
                      << "]";
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace dedupd
