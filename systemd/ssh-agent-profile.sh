# SPDX-License-Identifier: ISC
# Login shells (installed as /etc/profile.d/cloak-ssh-agent.sh): where the
# user's cloak SSH agent socket listens (cloak-ssh-agent.socket, enabled)
# and no agent is named already (a forwarded one, say), SSH_AUTH_SOCK
# names it. Graphical sessions get it from the user manager's
# environment (90cloak-ssh-agent).
if [ -z "${SSH_AUTH_SOCK:-}" ] && [ -n "${XDG_RUNTIME_DIR:-}" ] &&
	[ -S "$XDG_RUNTIME_DIR/cloak-ssh-agent/socket" ]; then
	SSH_AUTH_SOCK=$XDG_RUNTIME_DIR/cloak-ssh-agent/socket
	export SSH_AUTH_SOCK
fi
