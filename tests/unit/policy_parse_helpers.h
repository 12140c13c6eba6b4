// Parsing a policy text in a test: the policy when it must load, the message
// when it must not.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "policy/policy_loader.h"

namespace lsb {

inline Policy MustParse(const std::string &text) {
  auto p = ParsePolicyText(text, "t.yaml");
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : Policy{};
}

inline std::string ParseError(const std::string &text) {
  auto p = ParsePolicyText(text, "t.yaml");
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : p.error().message;
}

} // namespace lsb
