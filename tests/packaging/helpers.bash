# SPDX-License-Identifier: ISC
# Helpers of the packaging suite (packages.bats): the packages' files
# seen from this host, and a Debian trixie root to install them in.
ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
PKG_CACHE=${CLOAK_PKG_CACHE:-/var/cache/cloak-packaging}
ROOT_SUITE=trixie
# What the packages depend on and the tools run in the root, there before
# any test so that installing the packages needs no network.
ROOT_PACKAGES="python3 p11-kit lintian libssl3t64"
# The binary packages, in the order of debian/control.
PACKAGES="cloak cloak-guest-dev libcloak0 libcloak-sodium0 libcloak-openssl0 libcloak-dev cloak-ssh-agent cloak-pkcs11"

need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (mount namespaces, a Debian root, no-network build)"
}

# deb NAME: the path of binary package NAME built by setup_file.
deb() {
	echo "$DEBS/${1}_${PKG_VERSION}_amd64.deb"
}

# with_packages CMD...: CMD in a mount namespace of its own where the
# packages' /usr (all of them unpacked in $X) lies over this host's /usr,
# as if they were installed: nothing of the host changes.
with_packages() {
	unshare -m --propagation private bash -c '
		mount -t overlay overlay -o lowerdir="$1/usr:/usr" /usr || exit 99
		shift
		exec "$@"' _ "$X" "$@"
}

# The Debian mirror this machine installs from, for debootstrap.
debian_mirror() {
	local m
	m=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
	[ -n "$m" ] || m=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
	echo "${m:-http://deb.debian.org/debian}"
}

# debian_root: a Debian $ROOT_SUITE root (minbase, systemd, and
# $ROOT_PACKAGES) made once with debootstrap from this machine's mirror and
# kept in $PKG_CACHE (a few minutes the first time; CLOAK_PKG_CACHE moves
# it). Prints its path; fails saying why when it cannot be made.
debian_root() {
	local base=$PKG_CACHE/$ROOT_SUITE tmp
	mkdir -p "$PKG_CACHE" || return 1
	(
		flock 9
		[ -f "$base/.complete" ] && exit 0
		command -v debootstrap > /dev/null || { echo "no debootstrap: apt-get install debootstrap" >&2; exit 1; }
		tmp=$PKG_CACHE/$ROOT_SUITE.new
		rm -rf "$tmp"
		debootstrap --variant=minbase --include=systemd "$ROOT_SUITE" "$tmp" "$(debian_mirror)" \
			> "$PKG_CACHE/debootstrap.log" 2>&1 ||
			{ echo "debootstrap failed: see $PKG_CACHE/debootstrap.log" >&2; exit 1; }
		cp /etc/resolv.conf "$tmp/etc/resolv.conf"
		# shellcheck disable=SC2086 # a list of package names
		unshare -m --propagation private sh -c '
			root=$1; shift
			mount -t proc proc "$root/proc" &&
			DEBIAN_FRONTEND=noninteractive chroot "$root" sh -c "apt-get -qq update &&
				apt-get -y -qq install --no-install-recommends $* && apt-get clean"' \
			_ "$tmp" $ROOT_PACKAGES >> "$PKG_CACHE/debootstrap.log" 2>&1 ||
			{ echo "installing $ROOT_PACKAGES in the root failed: see $PKG_CACHE/debootstrap.log" >&2; exit 1; }
		rm -rf "$base" && mv "$tmp" "$base" && touch "$base/.complete"
	) 9> "$PKG_CACHE/lock" || return 1
	echo "$base"
}

# need_debian_root: $DEBIAN_ROOT, or SKIP naming why there is none
# (CLOAK_REQUIRE_PACKAGE_ROOT=1, as CI sets it: fail instead).
need_debian_root() {
	need_root
	if ! DEBIAN_ROOT=$(debian_root 2> "$BATS_TEST_TMPDIR/root.err"); then
		[ "${CLOAK_REQUIRE_PACKAGE_ROOT:-0}" = 1 ] && { cat "$BATS_TEST_TMPDIR/root.err"; return 1; }
		skip "no Debian $ROOT_SUITE root: $(cat "$BATS_TEST_TMPDIR/root.err")"
	fi
}

# in_root CMD: the shell command CMD in the Debian root, as root, with
# /proc and the packages (in /mnt). The root is an overlay over the cached
# one whose changes go to this test's own directory: each test starts
# from the same root, and the cache never changes.
in_root() {
	local top=$BATS_TEST_TMPDIR/root
	mkdir -p "$top/upper" "$top/work" "$top/mnt"
	unshare -m --propagation private bash -c '
		mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$2/mnt" &&
		mount -t proc proc "$2/mnt/proc" && mount --bind "$3" "$2/mnt/mnt" || exit 99
		DEBIAN_FRONTEND=noninteractive exec chroot "$2/mnt" /bin/sh -c "$4"' \
		_ "$DEBIAN_ROOT" "$top" "$DEBS" "$1"
}
