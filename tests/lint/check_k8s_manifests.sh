#!/usr/bin/env bash
# ctest lint:k8s_manifests: the Kubernetes manifests (deploy/kubernetes/*.yaml) and the
# Containerfile (deploy/container/Containerfile), offline: no cluster, no network.
#   check_k8s_manifests.sh SOURCE_DIR [DAEMON]
# The real files, then the validator's self-test (every broken sample in
# tools/k8s-validate/testdata and every broken variant of the manifests must be rejected, so a
# check that passes everything fails here). With DAEMON (the built ossmount), the ConfigMap's
# config files also go through the daemon's own option parser. Needs the pinned npm packages
# that scripts/install-deps.sh installs into tools/k8s-validate/node_modules.
set -euo pipefail
root=${1:?usage: check_k8s_manifests.sh SOURCE_DIR [DAEMON]}
daemon=${2:-}
tool=$root/tools/k8s-validate

# Fail, not skip: CI installs the packages first, and a skipped check would hide their absence.
for pkg in kubernetes-models yaml dockerfile-ast dockerfile-utils; do
  if [ ! -f "$tool/node_modules/$pkg/package.json" ]; then
    echo "check_k8s_manifests: $tool/node_modules/$pkg is missing; run scripts/install-deps.sh" >&2
    exit 1
  fi
done
daemon_args=()
if [ -n "$daemon" ]; then
  [ -x "$daemon" ] || { echo "check_k8s_manifests: $daemon is not an executable" >&2; exit 1; }
  daemon_args=(--daemon "$daemon")
fi

# The real files first: when one is broken, its problems are what to read (the self-test's
# variants of a broken manifest fail too, for the same reason).
node "$tool/validate.mjs" --manifests "$root/deploy/kubernetes" \
  --containerfile "$root/deploy/container/Containerfile" "${daemon_args[@]}"
node "$tool/validate.mjs" --self-test --manifests "$root/deploy/kubernetes" "${daemon_args[@]}"
