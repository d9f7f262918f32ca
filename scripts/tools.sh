# Sourced by the build scripts (edge-worker/build, wasm-pkg/build): the wasm target and the cargo
# tools they need, installed on first use into $tools (.cache/tools at the repository root, or
# $TOOLS_ROOT for a shared install) and then found in place, so later runs are offline.
tools="${TOOLS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/tools}"
wasm_bindgen_version=0.2.130

ensure_wasm_target() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    echo "build: adding the wasm32-unknown-unknown target" >&2
    rustup target add wasm32-unknown-unknown
  fi
}

# Installs crate $1 at version $2 unless $tools/bin/$3 already prints that version; the rest of
# the arguments go to cargo install.
ensure_tool() {
  local crate="$1" version="$2" binary="$3"
  shift 3
  if [[ -x "$tools/bin/$binary" ]] && "$tools/bin/$binary" --version 2>/dev/null | grep -qw "$version"; then
    return
  fi
  echo "build: installing $crate $version into $tools (a few minutes, once)" >&2
  cargo install --quiet --root "$tools" "$@" "$crate" --version "$version"
}

# wasm-bindgen's CLI must match the locked wasm-bindgen crate exactly. Not --locked: a
# dependency version its lockfile names is missing from the registry here.
ensure_wasm_bindgen() {
  ensure_tool wasm-bindgen-cli "$wasm_bindgen_version" wasm-bindgen
}

# The release profile of the wasm modules, for these builds only (the workspace's release
# profile keeps debug info for the origin's profiling): no debug info, whole-program LTO and one
# codegen unit make a module about a quarter smaller and no slower.
use_wasm_release_profile() {
  export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=true
  export CARGO_PROFILE_RELEASE_LTO=true CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
}
