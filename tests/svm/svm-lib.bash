# SPDX-License-Identifier: ISC
# Shared by the SVM tier's scripts (tests/svm/): where kernels are cached,
# how an apt entry for another suite is derived from this machine's own
# Debian sources, and which kernel modules the VM loads.

# Modules the VM needs, by name; fetch-kernel adds what each depends on
# (modinfo's depends= and softdep=, resolved by depmod and modprobe) and
# leaves out those a kernel has built in. kvm_amd is the point;
# the rest mount the shared directories (virtio-9p) and /tmp (ext4 on
# virtio-blk).
# mkfs.ext4, modinfo, depmod and modprobe live in sbin, which an ordinary
# user's PATH leaves out; each works on files of the user's own.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac
export PATH

SVM_MODULES="kvm_amd virtio_pci 9pnet_virtio 9p virtio_blk ext4"
export SVM_MODULES

svm_cache_dir() {
	if [ -n "${CLOAK_SVM_CACHE:-}" ]; then
		printf '%s\n' "$CLOAK_SVM_CACHE"
	elif [ "$(id -u)" = 0 ]; then
		printf '%s\n' /var/cache/cloak-svm
	else
		printf '%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}/cloak-svm"
	fi
}

# svm_machine_sources: this machine's Debian sources file (deb822 first;
# SVM_APT_SOURCES names another, for tests).
svm_machine_sources() {
	local f
	for f in ${SVM_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources /etc/apt/sources.list}; do
		if [ -s "$f" ]; then printf '%s\n' "$f"; return 0; fi
	done
	return 1
}

# svm_derive_sources SUITE [SOURCES-FILE]: prints an apt sources entry for
# SUITE made from the machine's entry for its own release (the stanza or
# line whose suite is the release's code name), with only the suite
# changed: same archive, components and keyring. SOURCES-FILE defaults to
# svm_machine_sources; a file ending in .sources is read as deb822 (and
# the entry printed so), any other in the one-line format. The code name comes from SVM_CODENAME, else
# /etc/os-release. Fails (status 1, prints nothing) if no entry matches.
svm_derive_sources() {
	local suite=$1 file=${2:-} codename=${SVM_CODENAME:-}
	[ -n "$file" ] || file=$(svm_machine_sources) || return 1
	[ -r "$file" ] || return 1
	if [ -z "$codename" ] && [ -r /etc/os-release ]; then
		codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
	fi
	[ -n "$codename" ] || return 1
	local out
	if [[ $file == *.sources ]]; then
		out=$(awk -v want="$codename" -v suite="$suite" '
			function flush() {
				if (ok && types ~ /(^| )deb( |$)/ && enabled != "no" && !done) {
					print "Types: deb"; print "URIs: " uris; print "Suites: " suite
					print "Components: " comps
					if (signed != "") print "Signed-By: " signed
					done = 1
				}
				ok = 0; types = uris = comps = signed = enabled = ""; last = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ { if (last == "signed-by") signed = signed "\n" $0; next }
			{
				key = tolower(substr($0, 1, index($0, ":") - 1)); val = substr($0, index($0, ":") + 1)
				sub(/^[ \t]+/, "", val); sub(/[ \t]+$/, "", val); last = key
				if (key == "types") types = val
				else if (key == "uris") uris = val
				else if (key == "components") comps = val
				else if (key == "signed-by") signed = val
				else if (key == "enabled") enabled = tolower(val)
				else if (key == "suites") { n = split(val, s, /[ \t]+/); for (i = 1; i <= n; i++) if (s[i] == want) ok = 1 }
			}
			END { flush() }' "$file")
	else
		out=$(awk -v want="$codename" -v suite="$suite" '
			$1 == "deb" && !done {
				i = 2
				if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i + 1) == want) { $(i + 1) = suite; print; done = 1 }
			}' "$file")
	fi
	[ -n "$out" ] || return 1
	printf '%s\n' "$out"
}

# svm_of_series SERIES DIR: whether a cached kernel's directory
# (ABI_VERSION, e.g. 6.1.0-57-amd64_6.1.192-3) is of SERIES: 6.1 must not
# take 6.12.N's directories for its own (fetch-kernel removes a series'
# older kernels).
svm_of_series() {
	local b=${2##*/}
	[[ ${b:0:${#1}} == "$1" && ${b:${#1}:1} == [.-] ]]
}

# svm_result_line FILE: the "N passed, N failed, N skipped" line of a
# tests/harness/run-tests log ("" if it has none: the run did not finish).
svm_result_line() {
	grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$1" 2>/dev/null | tail -1
}
