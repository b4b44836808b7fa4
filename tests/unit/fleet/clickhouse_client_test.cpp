// The ClickHouse client's pure parts (fleet/clickhouse_client.h): the URL
// and credentials file, and TabSeparated both ways with every byte a traced
// name can hold.
#include "fleet/clickhouse_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::fleet;

TEST(ClickHouseClient, TheUrlNamesTheServerAndTheDatabaseAndNeverAPassword) {
  auto ep = parse_endpoint("http://ch.example:8123/?database=fleet_1");
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  EXPECT_EQ(ep->base, "http://ch.example:8123/");
  EXPECT_EQ(ep->database, "fleet_1");
  EXPECT_EQ(ep->display(), "http://ch.example:8123/?database=fleet_1");
  auto bare = parse_endpoint("https://ch.example:8443");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->base, "https://ch.example:8443/");
  EXPECT_EQ(bare->database, "gpuobs");
  // Refused, and the message repeats no part of the URL (it may hold a secret).
  for (const char* bad : {"http://u:s3cret@ch:8123/", "http://ch:8123/?database=x&password=s3cret",
                          "clickhouse://u:s3cret@ch", "http://ch:8123/?database=a;DROP"}) {
    auto r = parse_endpoint(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().exit_code, 2) << bad;
    EXPECT_EQ(r.error().message.find("s3cret"), std::string::npos) << r.error().message;
  }
}

TEST(ClickHouseClient, CredentialsComeFromAPrivateFile) {
  gpuobs::testing::TempDir dir;
  std::string f = dir.file("cred");
  { std::ofstream(f) << "# fleet\nuser = gpuobs\npassword =  p=w d \n"; }
  ::chmod(f.c_str(), 0600);
  auto ep = parse_endpoint("http://ch:8123/", f);
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  EXPECT_EQ(ep->user, "gpuobs");
  EXPECT_EQ(ep->password, "p=w d");
  EXPECT_EQ(ep->display().find("p=w"), std::string::npos);
  ::chmod(f.c_str(), 0640);
  auto open = parse_endpoint("http://ch:8123/", f);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("can be read by others"), std::string::npos);
  { std::ofstream(f) << "token = x\n"; }
  ::chmod(f.c_str(), 0600);
  EXPECT_FALSE(parse_endpoint("http://ch:8123/", f).ok());
  EXPECT_FALSE(parse_endpoint("http://ch:8123/", dir.file("missing")).ok());
}

// A name with every escape ClickHouse writes (tab, newline, CR, NUL,
// backslash, \b \f \a \v) and bytes above 0x7f: sent and read back equal.
TEST(ClickHouseClient, TabSeparatedRoundTripsEveryByte) {
  std::string name = std::string("k<\t\n\r") + '\0' + "\\\b\f\a\v" + "\xc3\xa9\x01 end";
  std::string body;
  append_tsv_field(body, name);
  body += "\t42\t\\N\n";
  // What ClickHouse sends back for those bytes: the same escapes (\b and \f
  // among them, which append_tsv_field leaves raw but the server escapes).
  std::string from_server = "k<\\t\\n\\r\\0\\\\\\b\\f\\a\\v\xc3\xa9\x01 end\t42\t\\N\n";
  for (const std::string& text : {body, from_server}) {
    auto rows = parse_tsv(text);
    ASSERT_EQ(rows.size(), 1u);
    ASSERT_EQ(rows[0].size(), 3u);
    EXPECT_EQ(rows[0][0], name);
    EXPECT_EQ(rows[0][1], "42");
    EXPECT_EQ(rows[0][2], "\\N");  // NULL, kept apart from text
  }
  EXPECT_TRUE(parse_tsv("").empty());
}

// A name pasted into a query (--host, --process, the shipper's host):
// quotes and backslashes escaped, nothing else touched.
TEST(ClickHouseClient, SqlLiteralsEscapeQuotesAndBackslashes) {
  using gpuobs::fleet::sql_literal;
  EXPECT_EQ(sql_literal("host-a"), "'host-a'");
  EXPECT_EQ(sql_literal("it's"), "'it\\'s'");
  EXPECT_EQ(sql_literal("a\\b"), "'a\\\\b'");
  EXPECT_EQ(sql_literal("x' OR 1 --"), "'x\\' OR 1 --'");
  EXPECT_EQ(sql_literal(""), "''");
}
