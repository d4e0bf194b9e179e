#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# CLOAK_STATS=1 in programs that sandbox themselves: libcloak's statistics at
# exit make no system call but write(2). First a program that allows only
# write, exit and exit_group (seccomp, killing on anything else) before it
# exits; then Debian's sshd on loopback, whose preauth child runs under
# OpenSSH's own seccomp filter, with the OpenSSL preload: every key login
# must succeed (the filter killed every preauth child when the statistics
# asked for the lock limit). And where the preload cannot go: a set-group-ID
# program (Debian's ssh-agent).

bats_require_minimum_version 1.5.0

load helpers

setup() {
	libcloak_setup
	TMP="$(mktemp -d /var/tmp/cloak-sshd-XXXXXX)"
}

teardown() {
	if [ -f "$TMP/sshd.pid" ]; then kill "$(cat "$TMP/sshd.pid")" 2>/dev/null || :; fi
	rm -rf "$TMP"
}

@test "a program confined to write, exit and exit_group prints CLOAK_STATS at exit and exits 0 (libcloak.so and the OpenSSL preload)" {
	for lib in libcloak.so libcloak-openssl.so; do
		run env CLOAK_STATS=1 LD_PRELOAD="$BUILD/libcloak/$lib" "$BUILD/tests/libcloak/sandboxed_exit"
		echo "$lib: status $status: $output"
		[ "$status" -eq 0 ]
		[[ $output == "libcloak stats (pid "*"): backend memfd_secret; 0 secrets in use (0 bytes); 1 allocs, 1 frees;"* ]]
	done
	# The filter is real: a system call it does not allow kills the program
	# (SIGSYS, 31).
	run env LD_PRELOAD="$BUILD/libcloak/libcloak.so" "$BUILD/tests/libcloak/sandboxed_exit" --forbidden
	[ "$status" -eq $((128 + 31)) ]
}

# sshd_config DIR PORT: an sshd for DIR on 127.0.0.1:PORT that accepts only
# DIR/user_key, for root.
sshd_prepare() {
	local dir=$1 port=$2
	ssh-keygen -q -t rsa -b 2048 -N '' -f "$dir/host_key" || return 1
	ssh-keygen -q -t ed25519 -N '' -f "$dir/user_key" || return 1
	cp "$dir/user_key.pub" "$dir/authorized_keys"
	chmod 600 "$dir/authorized_keys"
	cat >"$dir/sshd_config" <<-EOF
	ListenAddress 127.0.0.1
	Port $port
	HostKey $dir/host_key
	AuthorizedKeysFile $dir/authorized_keys
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM no
	PermitRootLogin prohibit-password
	StrictModes no
	PidFile $dir/sshd.pid
	LogLevel VERBOSE
	EOF
}

@test "Debian's sshd with the OpenSSL preload and CLOAK_STATS=1: every key login succeeds; no preauth child is killed" {
	[ "$(id -u)" = 0 ] || skip "sshd's privilege separation needs root; run the suite as root"
	[ -x /usr/sbin/sshd ] || need "sshd is not installed (apt-get install openssh-server)"
	command -v ssh >/dev/null || need "ssh is not installed (apt-get install openssh-client)"
	mkdir -p /run/sshd # sshd's privilege-separation directory
	port=$(free_port)
	sshd_prepare "$TMP" "$port"
	# In the foreground, bounded; its stderr through a pipe, as a service
	# manager's journal takes it (the preauth child may not write files:
	# RLIMIT_FSIZE 0).
	(CLOAK_STATS=1 LD_PRELOAD="$PRELOAD" timeout 120 /usr/sbin/sshd -D -f "$TMP/sshd_config" \
		-E "$TMP/sshd.log" 2>&1 >/dev/null | cat >"$TMP/sshd.err") 3>&- &
	wait_port "$port"
	logins=0
	for _ in 1 2 3 4 5; do
		out=$(timeout 20 ssh -n -F /dev/null -i "$TMP/user_key" -p "$port" -o BatchMode=yes \
			-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
			root@127.0.0.1 echo login-ok) || :
		[ "$out" = login-ok ] && logins=$((logins + 1))
	done
	kill "$(cat "$TMP/sshd.pid")"
	for _ in $(seq 50); do [ -s "$TMP/sshd.err" ] && break; sleep 0.1; done
	cat "$TMP/sshd.log" "$TMP/sshd.err"
	echo "logins: $logins of 5"
	[ "$logins" -eq 5 ]
	[ "$(grep -c '^Accepted publickey for root' "$TMP/sshd.log")" -eq 5 ]
	run ! grep -E 'terminated by signal|killed' "$TMP/sshd.log"
	# The preload was in sshd, and printed its statistics at exit.
	grep -q '^libcloak stats (pid [0-9]*): backend memfd_secret' "$TMP/sshd.err"
}

# agent_has_preload AGENT: starts AGENT (ssh-agent -D) with the OpenSSL
# preload on a socket in $TMP and stops it; prints yes if the preload was
# loaded, else no. Loaded, libcloak reads its environment at once, and a bad
# CLOAK_STATS value gets its line on stderr; this works also where the
# agent's /proc/PID/maps is closed to its user (a set-group-ID process).
agent_has_preload() {
	local pid agent found=no
	# env, not timeout, gets the preload's variables: only the agent loads it.
	timeout 20 env CLOAK_STATS=check LD_PRELOAD="$PRELOAD" "$1" -D -a "$TMP/agent.sock" \
		>/dev/null 2>"$TMP/agent.err" 3>&- &
	pid=$!
	for _ in $(seq 50); do [ -S "$TMP/agent.sock" ] && break; sleep 0.1; done
	agent=$(pgrep -P "$pid" | head -1) # timeout's child is the agent
	[ -n "$agent" ] || { kill "$pid"; echo "no agent"; return 1; }
	kill "$agent" 2>/dev/null || :
	wait "$pid" 2>/dev/null || :
	grep -q '^libcloak: CLOAK_STATS=check is not 0 or 1' "$TMP/agent.err" && found=yes
	rm -f "$TMP/agent.sock"
	echo "$found"
}

@test "Debian's set-group-ID ssh-agent drops LD_PRELOAD without a word (as libcloak(3) says); a copy without the bit loads it" {
	[ -x /usr/bin/ssh-agent ] || need "ssh-agent is not installed (apt-get install openssh-client)"
	[ -g /usr/bin/ssh-agent ] || skip "this ssh-agent is not set-group-ID"
	[ "$(id -g)" != "$(stat -c %g /usr/bin/ssh-agent)" ] || skip "already in the agent's group: the loader keeps LD_PRELOAD"
	run agent_has_preload /usr/bin/ssh-agent
	echo "setgid: $output"
	[ "$output" = no ]
	cp /usr/bin/ssh-agent "$TMP/ssh-agent"
	run agent_has_preload "$TMP/ssh-agent"
	echo "copy: $output"
	[ "$output" = yes ]
}
