#!/usr/bin/env bash
# Stages Pitroom's npm packages — the one place their layout is made. Used by `.ci/npm` (packs
# and installs them offline) and by the release workflow (publishes them).
#
#   npm/stage.sh OUT_DIR [PLATFORM=BIN_DIR]...
#
# OUT_DIR/pitroom is the launcher (npm/pitroom). OUT_DIR/<platform> (linux-x64, linux-arm64,
# darwin-arm64, darwin-x64) is `@pitroom/<platform>`, made from npm/platform, with `pitroom` and
# `pitroom-guard` from BIN_DIR in its bin/, side by side: `pitroom` finds the guard beside its
# own executable (crates/pitroom-core/src/guard_env.rs). Every package.json gets the version of
# the workspace's Cargo.toml, and the launcher's optionalDependencies are pinned to it. OUT_DIR
# is emptied first. Prints the staged package directories, one a line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

if [ $# -lt 1 ]; then
  echo "usage: npm/stage.sh OUT_DIR [PLATFORM=BIN_DIR]..." >&2
  exit 2
fi
out=$1
shift

# [workspace.package] version in Cargo.toml.
version=$(awk '
  /^\[/ { in_pkg = ($0 == "[workspace.package]") }
  in_pkg && /^version *=/ { gsub(/^version *= *"|".*$/, ""); print; exit }
' "$root/Cargo.toml")
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then
  echo "npm/stage.sh: no [workspace.package] version in Cargo.toml (got '$version')" >&2
  exit 1
fi

rm -rf "$out"
mkdir -p "$out"

# Writes the version into a package.json (and into the launcher's optionalDependencies), and
# for a platform package its name, os and cpu.
fill() {
  local manifest=$1 platform=${2:-}
  node - "$manifest" "$version" "$platform" <<'JS'
const fs = require('fs');
const [file, version, platform] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
pkg.version = version;
if (platform) {
  const [os, cpu] = platform.split('-');
  pkg.name = `@pitroom/${platform}`;
  pkg.description = pkg.description.replace('PLATFORM', platform);
  pkg.os = [os];
  pkg.cpu = [cpu];
}
for (const dep of Object.keys(pkg.optionalDependencies || {})) {
  pkg.optionalDependencies[dep] = version;
}
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
JS
}

cp -R "$here/pitroom" "$out/pitroom"
chmod 755 "$out/pitroom/bin/pitroom.js"
fill "$out/pitroom/package.json"
echo "$out/pitroom"

for arg in "$@"; do
  platform=${arg%%=*}
  bin_dir=${arg#*=}
  case "$platform" in
    linux-x64 | linux-arm64 | darwin-arm64 | darwin-x64) ;;
    *)
      echo "npm/stage.sh: unknown platform '$platform'" >&2
      exit 2
      ;;
  esac
  dir="$out/$platform"
  mkdir -p "$dir/bin"
  cp "$here/platform/package.json" "$dir/package.json"
  sed "s/PLATFORM/$platform/g" "$here/platform/README.md" >"$dir/README.md"
  for exe in pitroom pitroom-guard; do
    if [ ! -f "$bin_dir/$exe" ]; then
      echo "npm/stage.sh: $bin_dir/$exe is missing (for $platform)" >&2
      exit 1
    fi
    install -m 755 "$bin_dir/$exe" "$dir/bin/$exe"
  done
  fill "$dir/package.json" "$platform"
  echo "$dir"
done
