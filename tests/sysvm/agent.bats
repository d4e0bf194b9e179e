#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The SSH agent as a user runs it (cloak-ssh-agent, docs/packaging.md): the
# user enables its socket once; in every later login SSH_AUTH_SOCK names
# it; the first client (ssh-add) starts the agent guest through the
# socket; OpenSSH logs in to this machine's own sshd with the agent's key
# and git signs commits with it; `systemctl --user stop` wipes it. Each
# command runs as the user in a login of its own (as_user). First boot.
bats_require_minimum_version 1.5.0
load helpers

@test "the user enables the agent's socket: it listens, no agent runs yet, and the next login's SSH_AUTH_SOCK names it" {
	run as_user "systemctl --user enable --now $AGENT_SOCKET"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run as_user "systemctl --user is-active $AGENT_SOCKET; systemctl --user is-active $AGENT_SERVICE"
	[ "$output" = "active
inactive" ] || { echo "$output"; return 1; }
	# A login shell (/etc/profile.d) and the user manager's environment
	# (what graphical sessions import) name the same socket.
	run as_user 'echo "$SSH_AUTH_SOCK"; [ -S "$SSH_AUTH_SOCK" ] && echo socket
		systemctl --user show-environment | sed -n "s/^SSH_AUTH_SOCK=//p"'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local uid
	uid=$(id -u "$SYSVM_USER")
	[ "$output" = "/run/user/$uid/cloak-ssh-agent/socket
socket
/run/user/$uid/cloak-ssh-agent/socket" ] ||
		{
			echo "$output"
			as_user 'systemctl --user list-units --all --no-pager "*agent*"
				systemctl --user show -p UnitFileState,WantedBy,TriggeredBy,FragmentPath ssh-agent.socket'
			return 1
		}
}

@test "ssh-add of an Ed25519 key starts the agent guest through its socket" {
	run as_user "ssh-keygen -q -t ed25519 -N '' -C alice-agent -f ~/.ssh/agent-key && ssh-add ~/.ssh/agent-key 2>&1 &&
		systemctl --user is-active $AGENT_SERVICE && ssh-add -l"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local fp
	fp=$(ssh-keygen -l -f "$(getent passwd "$SYSVM_USER" | cut -d: -f6)/.ssh/agent-key.pub" | awk '{ print $2 }')
	[[ $output == *"Identity added"* && $output == *active* && $output == *"$fp alice-agent (ED25519)"* ]] ||
		{ echo "$output"; return 1; }
	# The agent is the cloak monitor running the agent guest on the
	# socket systemd passed it, as the user.
	run pgrep -u "$SYSVM_USER" -f -- '--channel agent=fd:3 .*ssh-agent\.elf'
	[ "$status" -eq 0 ] || { ps -u "$SYSVM_USER" -o pid,args; return 1; }
}

@test "ssh to this machine's own sshd logs in with the agent's key, which is on no disk any more" {
	run as_user 'cat ~/.ssh/agent-key.pub >> ~/.ssh/authorized_keys && rm ~/.ssh/agent-key &&
		ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o PasswordAuthentication=no -o LogLevel=ERROR \
			"$(id -un)@127.0.0.1" "echo logged in as \$(id -un)"'
	[ "$status" -eq 0 ] && [ "$output" = "logged in as $SYSVM_USER" ] || { echo "$output"; return 1; }
	# The control: without the agent there is no key to log in with.
	run as_user 'SSH_AUTH_SOCK= ssh -o BatchMode=yes -o PasswordAuthentication=no "$(id -un)@127.0.0.1" true'
	[ "$status" -eq 255 ] || { echo "$output"; return 1; }
}

@test "git signs a commit with the agent's key (gpg.format=ssh) and git verify-commit accepts it" {
	run as_user 'set -e
		rm -rf ~/repo && git init -q ~/repo && cd ~/repo
		git config user.name Alice && git config user.email alice@sysvm
		git config gpg.format ssh && git config user.signingKey ~/.ssh/agent-key.pub
		echo "alice@sysvm namespaces=\"git\" $(cat ~/.ssh/agent-key.pub)" > ~/.ssh/allowed_signers
		git config gpg.ssh.allowedSignersFile ~/.ssh/allowed_signers
		echo hello > f && git add f && git commit -q -S -m "signed in the guest"
		git verify-commit HEAD 2>&1'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *'Good "git" signature for alice@sysvm with ED25519 key'* ]] || { echo "$output"; return 1; }
	# The control: with another key as the only allowed signer, the same
	# commit does not verify.
	run as_user 'cd ~/repo && ssh-keygen -q -t ed25519 -N "" -f ~/other-key &&
		echo "alice@sysvm namespaces=\"git\" $(cat ~/other-key.pub)" > ~/other_signers &&
		git -c gpg.ssh.allowedSignersFile="$HOME/other_signers" verify-commit HEAD'
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
}

@test "systemctl --user stop wipes the agent: its guest ends cleanly, and the next client starts an empty one" {
	# (systemctl warns that the socket stays: it does, for the next client.)
	run as_user "systemctl --user stop $AGENT_SERVICE 2>/dev/null && systemctl --user show -p Result --value $AGENT_SERVICE"
	[ "$status" -eq 0 ] && [ "$output" = success ] || { echo "$output"; return 1; }
	run ! pgrep -u "$SYSVM_USER" -f 'ssh-agent\.elf'
	run as_user 'ssh-add -l; echo "status $?"'
	[ "$output" = "The agent has no identities.
status 1" ] || { echo "$output"; return 1; }
}
