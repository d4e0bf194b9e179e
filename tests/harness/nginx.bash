# SPDX-License-Identifier: ISC
# nginx as libcloak's suites (tests/libcloak/helpers.bash) and the PKCS#11
# token's (pkcs11_programs.bats) run it: the site it serves HTTPS from, its
# workers, and its stop.

# nginx_site DIR [DIRECTIVE...] <SERVERS: in DIR a page, directories for
# temporary files and for cores, and an nginx.conf for a master and two
# workers (as nobody) keeping pid, logs and temporary files in DIR and
# dumping cores into DIR/cores, speaking TLS 1.2 and 1.3. Each DIRECTIVE is
# a line of the main context (such as `env NAME;`); the server blocks come
# on standard input.
nginx_site() {
	local dir=$1 main servers
	shift
	main=$(printf '%s\n' "$@")
	servers=$(cat)
	mkdir -p "$dir/tmp" "$dir/cores"
	chmod 755 "$dir" # searchable by the workers
	chmod 1777 "$dir/cores"
	echo "hello from nginx" >"$dir/index.html"
	cat >"$dir/nginx.conf" <<-EOF
	daemon on;
	master_process on;
	worker_processes 2;
	user nobody nogroup;
	$main
	pid $dir/nginx.pid;
	error_log $dir/error.log info;
	working_directory $dir/cores;
	worker_rlimit_core 1g;
	events { worker_connections 128; }
	http {
		log_format withpid '\$pid \$status \$ssl_protocol';
		access_log $dir/access.log withpid;
		client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
		uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
		ssl_protocols TLSv1.2 TLSv1.3;
	$servers
	}
	EOF
}

# nginx_workers DIR: the pids of the workers of the nginx whose site is DIR.
nginx_workers() {
	pgrep -P "$(cat "$1/nginx.pid" 2>/dev/null)" -f 'nginx: worker'
}

# nginx_stop DIR: a graceful stop (QUIT: the workers exit, which prints
# CLOAK_STATS), then KILL for whatever of it is left after 10 s.
nginx_stop() {
	local master all p
	master=$(cat "$1/nginx.pid" 2>/dev/null) || return 0
	[ -n "$master" ] || return 0
	all="$master $(pgrep -P "$master" | tr '\n' ' ')"
	kill -QUIT "$master" 2>/dev/null || :
	for _ in $(seq 100); do
		kill -0 "$master" 2>/dev/null || break
		sleep 0.1
	done
	for p in $all; do kill -KILL "$p" 2>/dev/null || :; done
	rm -f "$1/nginx.pid"
	return 0
}
