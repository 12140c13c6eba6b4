// The box's /etc when its root is the host's system directories (rootfs "host"): a synthetic
// directory, not the host's. The host's /etc holds what a box has no business reading (its
// hostname and machine-id, /etc/docker, ssh host keys, /etc/llm-sandbox tokens, package-manager
// credentials in pip.conf/npmrc/gitconfig, nsswitch modules that would talk to sssd or LDAP), so
// the box gets:
//   - made here: passwd and group (root, the box's user, nobody), hosts (localhost and the box's
//     hostname), hostname, an empty resolv.conf, nsswitch.conf (files only), mtab -> /proc;
//   - bound read-only from the host, if present: what programs were measured to open or reach
//     through symlinks from /usr (strace of python3, bash, node, pip; docs/security.md), e.g. the
//     ld.so cache, alternatives, ssl certificates and openssl.cnf, python3* config, timezone,
//     mime.types, services/protocols, locale.alias, os-release.
// Absent, among others: machine-id, shadow, ssh, docker, llm-sandbox, sudoers, subuid.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "protocol/messages.h"

namespace lsb::init {

// The host /etc entries a box sees (exact names; a trailing '*' matches a prefix).
const std::vector<std::string>& HostEtcAllowList();

// Builds `new_root`/etc from the host's /etc (still the current root's) and `setup`; the new
// root is still writable (it is made read-only after pivot_root, by BuildRoot).
Status BuildHostEtc(const std::string& new_root, const protocol::BoxSetup& setup);

}  // namespace lsb::init
