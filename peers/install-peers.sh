#!/usr/bin/env bash
# Installs the MCP servers serialgate is measured against (benches/peers.rs)
# into a scratch folder, from their registries:
#
#   serial-console-mcp  (Python, PyPI)     -> $PEERS_DIR/venv/bin/serial-console-mcp
#   serial-mcp          (Rust, crates.io)  -> $PEERS_DIR/serial-mcp/bin/serial-mcp
#
# PEERS_DIR defaults to bench-out/ in the repository (ignored by git). Nothing is
# installed anywhere else, except libudev-dev and pkg-config from Debian's
# packages when they are missing (serial-mcp's serialport links libudev).
# Idempotent: a second run finds everything in place and only prints the
# versions. The versions are pinned to those BENCHMARKS.md quotes; override
# with SCM_VERSION / SERIAL_MCP_VERSION (an empty value means the newest).
#
#   peers/install-peers.sh
#   PEERS_DIR=/tmp/peers peers/install-peers.sh
set -euo pipefail

crate_dir=$(cd "$(dirname "$0")/.." && pwd)
peers_dir=${PEERS_DIR:-$crate_dir/bench-out}
scm_version=${SCM_VERSION-0.3.2}
serial_mcp_version=${SERIAL_MCP_VERSION-0.9.3}
python=${PYTHON:-python3}

mkdir -p "$peers_dir"
peers_dir=$(cd "$peers_dir" && pwd)
echo "peers go to $peers_dir"

# --- serial-console-mcp, in its own venv -----------------------------------
venv=$peers_dir/venv
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "serial-console-mcp needs Python >= 3.10 ($python is $("$python" --version 2>&1))" >&2
    exit 1
fi
if [[ ! -x $venv/bin/python ]]; then
    "$python" -m venv "$venv"
fi
scm_spec=serial-console-mcp${scm_version:+==$scm_version}
installed=$("$venv/bin/python" -m pip show serial-console-mcp 2>/dev/null | sed -n 's/^Version: //p' || true)
if [[ -z $installed || ( -n $scm_version && $installed != "$scm_version" ) ]]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$scm_spec"
fi

# --- serial-mcp, with its own target dir -----------------------------------
if ! pkg-config --exists libudev 2>/dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing libudev-dev and pkg-config (serial-mcp links libudev)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libudev-dev pkg-config >/dev/null
    else
        echo "serial-mcp needs libudev's development files and pkg-config:" >&2
        echo "    sudo apt-get install libudev-dev pkg-config" >&2
        exit 1
    fi
fi
smcp_args=(serial-mcp --locked --root "$peers_dir/serial-mcp")
[[ -n $serial_mcp_version ]] && smcp_args+=(--version "$serial_mcp_version")
# `cargo install` skips a crate already installed at that version.
CARGO_TARGET_DIR=$peers_dir/serial-mcp-target cargo install --quiet "${smcp_args[@]}"

echo
echo "installed:"
echo "  $("$venv/bin/serial-console-mcp" --version)   $venv/bin/serial-console-mcp"
echo "  $("$peers_dir/serial-mcp/bin/serial-mcp" --version | head -1)   $peers_dir/serial-mcp/bin/serial-mcp"
