#!/usr/bin/env bats
# Channels: byte streams between a guest and host Unix sockets.
load helpers

ECHO=$GUESTS/chan_echo.elf

setup() {
	TMP=$(mktemp -d)
}

teardown() {
	[ -n "${PID:-}" ] && kill "$PID" 2>/dev/null || true
	rm -rf "$TMP"
}

# start_guest ARGS...: runs the monitor in the background, output in $TMP/out.
start_guest() {
	timeout 60 "$CLOAK" "$@" > "$TMP/out" 2>&1 &
	PID=$!
}

# finish_guest: waits for the monitor; its status in $status, output in $output.
finish_guest() {
	status=0
	wait "$PID" || status=$?
	PID=
	output=$(cat "$TMP/out")
}

# py SCRIPT ARGS...: a host-side peer written in Python.
py() {
	timeout 60 python3 -c "$@"
}

CONNECT='
import socket, sys, time
def connect(path):
    for _ in range(200):
        try:
            s = socket.socket(socket.AF_UNIX); s.connect(path); return s
        except OSError:
            time.sleep(0.05)
    sys.exit("cannot connect to " + path)
def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        x = s.recv(n - len(b))
        if not x: sys.exit("peer closed after %d of %d bytes" % (len(b), n))
        b += x
    return bytes(b)
'

@test "echo: 1 MiB of random bytes comes back intact; a peer that leaves is EPIPE for the guest" {
	need_kvm
	start_guest --channel c=listen:"$TMP/c.sock" "$ECHO" echo c
	py "$CONNECT"'
import os, threading
s = connect(sys.argv[1]); data = os.urandom(1 << 20); got = []
t = threading.Thread(target=lambda: got.append(recv_exact(s, len(data)))); t.start()
s.sendall(data); t.join()
assert got[0] == data, "echo differs"
s.close()' "$TMP/c.sock"
	finish_guest
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"echoed 1048576 bytes, then -10"* ]]
}

@test "several channels at once: the guest relays between two host sockets both ways" {
	need_kvm
	start_guest --channel a=listen:"$TMP/a.sock" --channel b=listen:"$TMP/b.sock" \
		"$ECHO" relay a b
	py "$CONNECT"'
a = connect(sys.argv[1]); b = connect(sys.argv[2])
for i in range(20):
    a.sendall(b"to-b %d;" % i); assert recv_exact(b, len(b"to-b %d;" % i)) == b"to-b %d;" % i
    b.sendall(b"to-a %d;" % i); assert recv_exact(a, len(b"to-a %d;" % i)) == b"to-a %d;" % i
a.close(); b.close()' "$TMP/a.sock" "$TMP/b.sock"
	finish_guest
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"then -10"* ]]
}

@test "a peer that never connects: a read with a deadline ends in ETIMEDOUT, the guest sleeping" {
	need_kvm
	# The monitor's CPU time shows whether the guest slept or spun.
	run py '
import resource, subprocess, sys
out = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=30).stdout
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out.strip(), "cpu_ms", int((ru.ru_utime + ru.ru_stime) * 1000))' \
		"$CLOAK" --channel c=listen:"$TMP/c.sock" "$ECHO" wait c 300
	[ "$status" -eq 0 ]
	[[ "$output" =~ read:\ -13\ after\ (3[0-9][0-9])\ ms\ cpu_ms\ ([0-9]+) ]] || { echo "$output"; false; }
	[ "${BASH_REMATCH[2]}" -lt 150 ] || { echo "spun: $output"; false; }
}

@test "connect: with no listener the guest's open is EPIPE; with one, data flows" {
	need_kvm
	run_cloak --channel c=connect:"$TMP/none.sock" "$ECHO" open c
	[ "$status" -eq 0 ]
	[[ "$output" == *"open: -10"* ]]
	py '
import socket, sys, subprocess
l = socket.socket(socket.AF_UNIX); l.bind(sys.argv[1]); l.listen(1)
p = subprocess.Popen([sys.argv[2], "--channel", "c=connect:" + sys.argv[1], sys.argv[3], "echo", "c"],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
s, _ = l.accept(); s.sendall(b"over connect"); got = b""
while len(got) < 12: got += s.recv(100)
assert got == b"over connect", got
s.close(); out = p.communicate(timeout=30)[0].decode()
assert p.returncode == 0 and "echoed 12 bytes, then -10" in out, out' "$TMP/l.sock" "$CLOAK" "$ECHO"
}

@test "backpressure guest to host: a slow reader gets all 4 MiB in order" {
	need_kvm
	start_guest --channel c=listen:"$TMP/c.sock" "$ECHO" source c 4194304
	py "$CONNECT"'
s = connect(sys.argv[1]); time.sleep(1.0)  # the guest fills the socket and must wait
data = recv_exact(s, 4194304)
want = bytes(range(256)) * (len(data) // 256)
assert data == want, "stream corrupted"' "$TMP/c.sock"
	finish_guest
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"sent 4194304"* ]]
}

@test "backpressure host to guest: the host's writes wait for the guest to read" {
	need_kvm
	start_guest --channel c=listen:"$TMP/c.sock" "$ECHO" sink c 4194304
	py "$CONNECT"'
s = connect(sys.argv[1]); s.setblocking(False); sent = 0; blocked = 0
chunk = b"x" * 65536
while sent < 4194304:
    try:
        sent += s.send(chunk[: 4194304 - sent])
    except BlockingIOError:
        blocked += 1; time.sleep(0.01)
assert blocked > 0, "the host never had to wait: no backpressure observed"
s.setblocking(True); s.recv(1)' "$TMP/c.sock"
	finish_guest
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"received 4194304"* ]]
}

@test "a listening channel serves a new peer after the first one leaves" {
	need_kvm
	start_guest --channel c=listen:"$TMP/c.sock" "$ECHO" reopen c 2
	py "$CONNECT"'
for i in range(2):
    s = connect(sys.argv[1]); s.sendall(b"peer %d" % i)
    assert recv_exact(s, 6) == b"peer %d" % i; s.close()' "$TMP/c.sock"
	finish_guest
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c 'then -10' <<< "$output")" -eq 2 ]
}

@test "bad channel specs and unusable socket paths are one-line start-up errors" {
	need_kvm
	run_cloak --channel c=serve:"$TMP/x" "$ECHO" open c
	[ "$status" -eq 251 ]
	[[ "$output" == *"expected NAME=listen:PATH or NAME=connect:PATH"* ]]
	touch "$TMP/file"
	run_cloak --channel c=listen:"$TMP/file" "$ECHO" open c
	[ "$status" -eq 249 ]
	[[ "$output" == *"exists and is not a socket"* ]]
	run_cloak --channel c=listen:"$TMP/c.sock" "$ECHO" open nosuch
	[ "$status" -eq 0 ]
	[[ "$output" == *"open: -5"* ]]
}

@test "the guest hangs up on a peer: the peer reads end-of-file, the next peer is served" {
	need_kvm
	start_guest --channel c=listen:"$TMP/c.sock" "$ECHO" hangup c 2
	py "$CONNECT"'
for i in range(2):
    s = connect(sys.argv[1]); s.sendall(b"x")
    assert recv_exact(s, 3) == b"bye"
    s.settimeout(30)
    assert s.recv(1) == b"", "still connected after the hang-up"
    s.close()' "$TMP/c.sock"
	finish_guest
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# After the hang-up the guest's reads are EPIPE (-10) until it opens again.
	[ "$(grep -c 'hangup [01]: 0, then read -10' <<< "$output")" -eq 2 ]
}
