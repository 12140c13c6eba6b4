// The policy's `backend` and `container.runtime`: which backend must run it and, on Docker, which
// OCI runtime. Each value is declared once below with its YAML spelling, which is also its
// spelling on the wire (JSON), in `policy explain` and in messages; everything compares the enums.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lsb {

// X(enumerator, spelling)
#define LSB_BACKEND_KINDS(X) \
  X(kAuto, "auto")           \
  X(kNative, "native")       \
  X(kDocker, "docker")
#define LSB_CONTAINER_RUNTIMES(X) \
  X(kRunc, "runc")                \
  X(kRunsc, "runsc")

#define LSB_SPELLED_ENUMERATOR(id, spelling) id,
// kAuto: whichever backend the daemon or the run command uses (the policy does not insist).
enum class BackendKind : uint8_t { LSB_BACKEND_KINDS(LSB_SPELLED_ENUMERATOR) };
// kRunsc is gVisor; the native backend refuses it (policy_checks.cc, native_controls.cc).
enum class ContainerRuntime : uint8_t { LSB_CONTAINER_RUNTIMES(LSB_SPELLED_ENUMERATOR) };
#undef LSB_SPELLED_ENUMERATOR

std::string Spelling(BackendKind kind);
std::string Spelling(ContainerRuntime runtime);

// The value spelled `text` exactly; nullopt for any other text.
std::optional<BackendKind> ParseBackendKind(std::string_view text);
std::optional<ContainerRuntime> ParseContainerRuntime(std::string_view text);

// Every spelling, in the table's order (the parser's choices and its did-you-mean).
std::vector<std::string> BackendKindSpellings();
std::vector<std::string> ContainerRuntimeSpellings();

}  // namespace lsb
