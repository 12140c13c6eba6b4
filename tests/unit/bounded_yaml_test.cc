// The one reader of YAML files (policy/bounded_yaml.h) and its callers: deep flow and block
// nesting (10^5 and 10^6 levels), many nodes and big files are refused with the limit named and
// a position, before yaml-cpp recurses or builds nodes; the policy parser, the image map and the
// Docker image section report it as an error, never a crash. Issue 15, class 1.
#include "policy/bounded_yaml.h"

#include <gtest/gtest.h>

#include "policy/policy_loader.h"
#include "runtime/docker/image_resolver.h"
#include "runtime/image_map.h"

namespace lsb {
namespace {

std::string Flow(size_t n) { return std::string(n, '[') + std::string(n, ']'); }

std::string BlockMaps(size_t n) {  // a:\n  a:\n    a: ...
  std::string s;
  for (size_t i = 0; i < n; ++i) s += std::string(2 * i, ' ') + "a:\n";
  return s;
}

YamlLimits Big() {
  YamlLimits l;
  l.max_bytes = 64u << 20;
  l.max_nodes = SIZE_MAX;
  return l;
}

TEST(BoundedYaml, WithinTheLimitsPasses) {
  EXPECT_FALSE(CheckYamlBounds("version: 1\nname: x\ncommands:\n  allow: [/bin/ls, /bin/cat]\n"));
  // 64 levels in all: the document's root sequence and 63 below it.
  EXPECT_FALSE(CheckYamlBounds(Flow(kYamlMaxDepth)));
  auto node = LoadBoundedYaml("a: {b: [1, 2]}\n", "f.yaml");
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ((*node)["a"]["b"][1].as<int>(), 2);
}

TEST(BoundedYaml, DeepFlowIsRefusedAtItsPosition) {
  for (size_t n : {size_t{65}, size_t{100000}, size_t{1000000}}) {
    auto e = CheckYamlBounds("x: " + Flow(n), Big());
    ASSERT_TRUE(e) << n;
    EXPECT_EQ(e->kind, YamlErrorKind::kTooDeep);
    EXPECT_EQ(e->limit, kYamlMaxDepth);
    EXPECT_NE(e->message.find("limit of 64 levels"), std::string::npos) << e->message;
    EXPECT_EQ(e->mark.line, 0);
    EXPECT_EQ(e->mark.column, 3 + 63);  // the root mapping is level 1: the 64th '[' is level 65
  }
  std::string flow_maps = "x: ";
  for (int i = 0; i < 100000; ++i) flow_maps += "{a: ";
  flow_maps += "1" + std::string(100000, '}');
  auto maps = CheckYamlBounds(flow_maps, Big());
  ASSERT_TRUE(maps);
  EXPECT_EQ(maps->kind, YamlErrorKind::kTooDeep);
  auto unclosed = CheckYamlBounds(std::string(1000000, '['), Big());
  ASSERT_TRUE(unclosed);
  EXPECT_EQ(unclosed->kind, YamlErrorKind::kTooDeep);
}

TEST(BoundedYaml, DeepBlockNestingIsRefused) {
  auto maps = CheckYamlBounds(BlockMaps(100), Big());
  ASSERT_TRUE(maps);
  EXPECT_EQ(maps->kind, YamlErrorKind::kTooDeep);
  EXPECT_EQ(maps->mark.line, 64);
  // Compact block sequences nest one level per two bytes: "- - - - ... a".
  std::string seqs;
  for (int i = 0; i < 500000; ++i) seqs += "- ";
  seqs += "a\n";
  auto s = CheckYamlBounds(seqs, Big());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, YamlErrorKind::kTooDeep);
  EXPECT_FALSE(CheckYamlBounds(BlockMaps(kYamlMaxDepth)));
}

TEST(BoundedYaml, SizeAndNodeCountAreRefused) {
  std::string big = "x: \"" + std::string(kYamlMaxBytes, 'y') + "\"\n";
  auto b = CheckYamlBounds(big);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, YamlErrorKind::kTooLarge);
  EXPECT_EQ(b->limit, kYamlMaxBytes);
  EXPECT_NE(b->message.find("limit of 1048576 bytes"), std::string::npos) << b->message;

  std::string wide = "x: [1";
  for (size_t i = 0; i < kYamlMaxNodes; ++i) wide += ",1";
  wide += "]\n";
  auto w = CheckYamlBounds(wide);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, YamlErrorKind::kTooManyNodes);
  EXPECT_NE(w->message.find("limit of 65536"), std::string::npos) << w->message;
  // Aliases are one node each (yaml-cpp shares, never copies, the anchored node).
  EXPECT_FALSE(CheckYamlBounds("a: &x [1, 2, 3]\nb: [*x, *x, *x, *x]\n"));
}

TEST(BoundedYaml, LaterDocumentsAreCheckedToo) {
  auto e = CheckYamlBounds("a: 1\n---\nb: " + Flow(1000) + "\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, YamlErrorKind::kTooDeep);
  EXPECT_EQ(e->mark.line, 2);
}

TEST(BoundedYaml, LoadNamesFileLineAndColumn) {
  auto r = LoadBoundedYaml("a:\n  b: " + Flow(200) + "\n", "deep.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deep.yaml:2:"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("limit of 64 levels"), std::string::npos) << r.error().message;
  auto syntax = LoadBoundedYaml("a: [\n", "bad.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.error().message.find("bad.yaml:"), std::string::npos);
  EXPECT_NE(syntax.error().message.find("invalid YAML"), std::string::npos);
}

TEST(BoundedYaml, DeepPolicyIsADiagnostic) {
  for (size_t n : {size_t{100}, size_t{100000}}) {
    PolicyParse p = ParsePolicyDetailed("version: 1\nname: deep\ncommands:\n  allow: " + Flow(n) + "\n", "deep.yaml");
    EXPECT_FALSE(p.policy);
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_NE(p.diagnostics[0].message.find("limit of 64 levels"), std::string::npos) << p.diagnostics[0].message;
    EXPECT_EQ(p.diagnostics[0].pos.line, 4);
  }
  auto text = ParsePolicyText("version: 1\nname: deep\n" + BlockMaps(300), "deep.yaml");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("deep.yaml:"), std::string::npos) << text.error().message;
  EXPECT_NE(text.error().message.find("limit of 64 levels"), std::string::npos) << text.error().message;
}

TEST(BoundedYaml, DeepOrOddImageMapsAreErrors) {
  auto m = ImageMap::Parse("images:\n  a: " + Flow(100000) + "\n", "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("m.yaml:2:"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("limit of 64 levels"), std::string::npos) << m.error().message;
  // A list where an image name belongs: a conversion error, not an exception out of Parse.
  auto key = ImageMap::Parse("images:\n  [a, b]: host\n", "m.yaml");
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message.find("m.yaml:2:"), std::string::npos) << key.error().message;
  auto top = ImageMap::Parse("[x]: 1\n", "m.yaml");
  EXPECT_FALSE(top.ok());

  auto d = docker::ImageResolver::ParseDockerSection("docker:\n  a: " + Flow(100000) + "\n", "d.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("limit of 64 levels"), std::string::npos) << d.error().message;
  auto dkey = docker::ImageResolver::ParseDockerSection("docker:\n  [a]: b\n", "d.yaml");
  ASSERT_FALSE(dkey.ok());
  EXPECT_NE(dkey.error().message.find("d.yaml:2:"), std::string::npos) << dkey.error().message;
}

}  // namespace
}  // namespace lsb
