#!/usr/bin/env bash
# The modules of src/ include each other only down the dependency graph of
# docs/ARCHITECTURE.md, so that no module links (or rebuilds for) more than it uses. Fails
# naming each file and include that breaks the table below. The public headers (ossmount/)
# are allowed everywhere; daemon/, tools/ and tests/ may include anything and are not read.
set -u
root=${1:?source dir}

declare -A allowed=(
  [common]=""
  [auth]="common"
  [http]="common auth"
  [object]="common auth http"
  [meta]="common"
  [data]="common"
  [readahead]="common data"
  [prefetch]="common data"
  [upload]="common data"
  [fs]="common data meta readahead prefetch upload"
  [control]="common"
  [fuse]="common fs control"
  [config]="common"
)
# src/config may also include the leaf option headers of any module: plain structs filled from
# the options, no code, so configuration depends on no class definition.
config_leaf='/([a-z0-9_]+_options|credential_sources)\.h$'

is_module() { [[ -n ${allowed[$1]+set} ]]; }

failed=0
for dir in "$root"/src/*/; do
  module=$(basename "$dir")
  if ! is_module "$module"; then
    echo "src/$module: not in the table of tests/lint/check_module_deps.sh; add its allowed modules"
    failed=1
    continue
  fi
  # file:line:path for every #include "dir/file" of the module.
  while IFS=: read -r file line path; do
    target=${path%%/*}
    is_module "$target" || continue  # ossmount/ public headers, system and third-party headers
    [[ $target == "$module" ]] && continue
    [[ " ${allowed[$module]} " == *" $target "* ]] && continue
    [[ $module == config && $path =~ $config_leaf ]] && continue
    also=""
    [[ $module == config ]] && also=", and *_options.h or credential_sources.h of any module"
    echo "${file#"$root"/}:$line: $module may not include \"$path\"" \
      "(allowed: ${allowed[$module]:-nothing}$also)"
    failed=1
  done < <(grep -rnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[A-Za-z0-9_]+/[^"]+"' \
             --include='*.h' --include='*.hpp' --include='*.cc' --include='*.cpp' "$dir" |
           sed -E 's/:[[:space:]]*#[[:space:]]*include[[:space:]]*"/:/; s/"$//')
done
# The ObjectClient interface belongs to src/object and what is built on it: the modules below
# it (the fetch engine, signing, common) use the leaf public headers instead (ossmount/transfer.h).
while IFS=: read -r file line path; do
  echo "${file#"$root"/}:$line: a module below src/object may not include \"$path\"" \
    "(use ossmount/transfer.h or ossmount/status.h)"
  failed=1
done < <(grep -rnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"ossmount/(forwarding_)?object_client\.h"' \
           --include='*.h' --include='*.cc' "$root"/src/common "$root"/src/auth "$root"/src/http |
         sed -E 's/:[[:space:]]*#[[:space:]]*include[[:space:]]*"/:/; s/"$//')
if [[ $failed -ne 0 ]]; then
  echo "module dependencies: FAILED (the allowed graph is in tests/lint/check_module_deps.sh)"
  exit 1
fi
echo "module dependencies ok"
