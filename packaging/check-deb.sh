#!/usr/bin/env bash
# Builds the Debian package and checks it on this machine: installs it,
# checks the installed files, modes, account, unit and config, runs lintian,
# renders the man pages, loads the completions, then removes it (config and
# logs stay) and purges it (they go).
#   packaging/check-deb.sh [PROFILE]    (default release; users' is dist)
# Debian 12 or later, as root or with sudo; systemd need not be running (a
# container will do). It refuses to run where serialgate is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${1:-release}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

fail() {
    echo "check-deb: $*" >&2
    exit 1
}
step() { echo "check-deb: $*"; }

if dpkg-query -W -f='${Status}' serialgate 2>/dev/null | grep -q installed; then
    fail "serialgate is installed on this machine; this check installs and purges its own package: run it in a container"
fi

# The account and directories the package owns must be its own doing.
for path in /etc/serialgate /var/log/serialgate /var/lib/serialgate; do
    [ ! -e "$path" ] || fail "$path exists before the install: run this on a machine without serialgate"
done

start=$(date +%s)
packaging/build-deb.sh "$profile"
deb=$(ls -t target/debian/serialgate_*.deb | head -n 1)
step "built $deb in $(($(date +%s) - start)) s ($(du -k "$deb" | cut -f1) KiB)"

step "lintian"
# Errors fail the check; warnings are shown.
lintian --fail-on error --info "$deb"

step "dpkg -i"
$sudo dpkg -i "$deb"
step "installed size $(dpkg-query -W -f='${Installed-Size}' serialgate) KiB"

# owner:group mode of PATH, which must be WANT.
expect_stat() {
    local got
    got=$($sudo stat -c '%U:%G %a' "$1")
    [ "$got" = "$2" ] || fail "$1 is $got, wanted $2"
}
expect_stat /usr/bin/serialgate "root:root 755"
expect_stat /etc/serialgate "root:serialgate 750"
expect_stat /etc/serialgate/config.toml "root:serialgate 640"
expect_stat /var/log/serialgate "serialgate:serialgate 750"
expect_stat /var/lib/serialgate "serialgate:serialgate 750"
expect_stat /usr/lib/systemd/system/serialgate.service "root:root 644"
expect_stat /usr/lib/udev/rules.d/99-serialgate.rules "root:root 644"
dpkg-query -W -f='${Conffiles}' serialgate | grep -q ' /etc/serialgate/config.toml ' ||
    fail "/etc/serialgate/config.toml is not a conffile"

step "account"
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd serialgate) || fail "no user serialgate"
[ "$uid" -lt 1000 ] || fail "serialgate is uid $uid, not a system user"
[ "$(getent group serialgate | cut -d: -f3)" = "$gid" ] || fail "serialgate's primary group is not serialgate"
[ "$shell" = /usr/sbin/nologin ] || fail "serialgate's shell is $shell"
[ "$home" = /var/lib/serialgate ] || fail "serialgate's home is $home"
id -nG serialgate | tr ' ' '\n' | grep -qx dialout || fail "serialgate is not in group dialout"

step "version"
version=$(serialgate --version)
echo "  $version"
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
    [ "$version" = "serialgate $(dpkg-query -W -f='${Version}' serialgate | cut -d- -f1) ($commit)" ] ||
        fail "serialgate --version says \"$version\", not the commit $commit"
fi

step "unit"
unit=/usr/lib/systemd/system/serialgate.service
grep -q '^ExecStart=/usr/bin/serialgate serve --config /etc/serialgate/config.toml$' "$unit" ||
    fail "the unit does not start /usr/bin/serialgate"
! grep -q /usr/local "$unit" || fail "the unit names /usr/local"
# Installed, not enabled: nothing in a .wants directory.
if ls /etc/systemd/system/*.wants/serialgate.service >/dev/null 2>&1; then
    fail "the install enabled the unit"
fi
if command -v systemd-analyze >/dev/null; then
    # Without a running systemd the verifier may warn about its own
    # environment; only lines naming this unit count (as in
    # tests/testsuite/service.rs).
    verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $verify"
    [ -z "$verify" ] || sed 's/^/  (verifier) /' <<<"$verify"
    problems=$(grep -i 'serialgate' <<<"$verify" || true)
    [ -z "$problems" ] || fail "systemd-analyze verify: $verify"
else
    step "  (no systemd-analyze: unit not verified)"
fi

step "config, as user serialgate"
$sudo runuser -u serialgate -- serialgate check-config /etc/serialgate/config.toml >/tmp/check-deb.out
cat /tmp/check-deb.out
# A fresh install serves nothing: no ports, no listener.
grep -qx '  (none)' /tmp/check-deb.out || fail "the installed config has ports"
! $sudo grep -Eq '^[[:space:]]*(listen|metrics_listen)[[:space:]]*=' /etc/serialgate/config.toml ||
    fail "the installed config listens on the network"

step "man pages"
# One page per subcommand in --help (help itself aside), each rendering
# without a complaint from man or groff.
for cmd in "" $(serialgate --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && $1 != "help" { print $1 }'); do
    page=/usr/share/man/man1/serialgate${cmd:+-$cmd}.1.gz
    [ -f "$page" ] || fail "no man page $page"
    complaints=$(MANWIDTH=80 man -l "$page" 2>&1 >/dev/null) || fail "man -l $page failed: $complaints"
    [ -z "$complaints" ] || fail "man -l $page: $complaints"
    echo "  $page"
done

step "completions"
bash -c 'source /usr/share/bash-completion/completions/serialgate && complete -p serialgate' >/dev/null ||
    fail "the bash completion does not load"
if command -v zsh >/dev/null; then
    zsh -c 'autoload -U compinit && compinit -u && source /usr/share/zsh/vendor-completions/_serialgate' ||
        fail "the zsh completion does not load"
fi
if command -v fish >/dev/null; then
    fish -c 'source /usr/share/fish/vendor_completions.d/serialgate.fish; complete -C"serialgate check-"' |
        grep -q '^check-config' || fail "the fish completion does not complete check-config"
fi

step "dpkg -r: config and logs stay"
$sudo sh -c 'echo kept >/var/log/serialgate/audit.log'
$sudo dpkg -r serialgate
[ ! -e /usr/bin/serialgate ] || fail "the binary outlived dpkg -r"
$sudo test -f /etc/serialgate/config.toml || fail "dpkg -r removed the config"
$sudo test -f /var/log/serialgate/audit.log || fail "dpkg -r removed the logs"
getent passwd serialgate >/dev/null || fail "dpkg -r removed the user"

step "dpkg -P: config, logs and state go"
$sudo dpkg -P serialgate
for path in /etc/serialgate /var/log/serialgate /var/lib/serialgate; do
    [ ! -e "$path" ] || fail "$path outlived dpkg -P"
done
! dpkg-statoverride --list | grep -q serialgate || fail "dpkg -P left a stat override"

step "ok ($(($(date +%s) - start)) s)"
