#!/usr/bin/env python3
"""Syntax and shape of deploy/kubernetes/*.yaml and deploy/swarm/stack.yml (python3-yaml): they
parse, every Kubernetes object has apiVersion/kind/metadata.name, the DaemonSet's selector matches
its template, and the Swarm stack's services are global with host-published ports. This is NOT a
test against a Kubernetes API server (none is available here); it only keeps the files well formed."""
import glob
import os
import sys

import yaml

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
errors = []
for path in sorted(glob.glob(os.path.join(root, "deploy", "kubernetes", "*.yaml"))):
    for doc in yaml.safe_load_all(open(path)):
        if not doc:
            continue
        name = "%s: %s" % (os.path.basename(path), doc.get("kind"))
        for key in ("apiVersion", "kind"):
            if key not in doc:
                errors.append("%s lacks %s" % (name, key))
        if not doc.get("metadata", {}).get("name"):
            errors.append("%s lacks metadata.name" % name)
        if doc.get("kind") == "DaemonSet":
            want = doc["spec"]["selector"]["matchLabels"]
            have = doc["spec"]["template"]["metadata"]["labels"]
            if any(have.get(k) != v for k, v in want.items()):
                errors.append("%s: the selector does not match the template's labels" % name)
stack = yaml.safe_load(open(os.path.join(root, "deploy", "swarm", "stack.yml")))
for svc, spec in stack["services"].items():
    if spec.get("deploy", {}).get("mode") != "global":
        errors.append("stack.yml: %s is not a global service" % svc)
    if any(p.get("mode") != "host" for p in spec.get("ports", [])):
        errors.append("stack.yml: %s publishes a port outside host mode (needs IPVS)" % svc)
for e in errors:
    print("check_manifests: " + e)
print("check_manifests: %s" % ("FAIL" if errors else "ok"))
sys.exit(1 if errors else 0)
