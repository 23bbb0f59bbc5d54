#!/usr/bin/env bash
# Builds the Debian package, target/debian/serialgate_VERSION-1_ARCH.deb:
#   packaging/build-deb.sh [PROFILE]    (default dist: fat LTO, for users)
# Builds the binary, stages what cargo deb packages from target/packaging/
# (the man pages and shell completions the binary generates from its own
# command definition, and the unit with the package's /usr/bin paths), then
# runs `cargo deb --no-build` on that binary. Needs cargo-deb:
#   cargo install cargo-deb --locked
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${1:-dist}"
cargo build --locked --profile "$profile" --bin serialgate
bin="${CARGO_TARGET_DIR:-target}/$profile/serialgate"

stage=target/packaging
rm -rf "$stage"
mkdir -p "$stage/man" "$stage/completions"
"$bin" generate-man "$stage/man"
"$bin" completions bash >"$stage/completions/serialgate"
"$bin" completions zsh >"$stage/completions/_serialgate"
"$bin" completions fish >"$stage/completions/serialgate.fish"

# The unit is config/serialgate.service with the package's binary path; its
# opening comment (how to install by hand) gives way to the package's.
{
    echo "# systemd unit for serialgate, installed by its Debian package: neither"
    echo "# enabled nor started. Configure /etc/serialgate/config.toml, then:"
    echo "#   sudo systemctl enable --now serialgate"
    sed -n '/^\[Unit\]/,$p' config/serialgate.service |
        sed 's|/usr/local/bin/serialgate|/usr/bin/serialgate|g'
} >"$stage/serialgate.service"
if grep -q /usr/local "$stage/serialgate.service"; then
    echo "build-deb: the unit still names /usr/local" >&2
    exit 1
fi

cargo deb --locked --profile "$profile" --no-build
