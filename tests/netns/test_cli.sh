#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The command line itself, through BUILD/slicelimit: global options as
# getopt_long reads them (-jp, -vvj, --json=yes, after the command too),
# version/--version/-V, one JSON object on stdout for every usage error
# under -j, range errors of the numeric flags (exit 2, naming the flag and
# its range), and --pretty keeping top --watch one object a line. Reads
# JSON and exit codes only.
#
#   bash tests/netns/test_cli.sh BUILD_DIR
#
# No network namespace: the few commands that need pins run on a bpffs of
# this run's own (a private mount namespace), never the host's.
set -u
if [ -z "${SL_PRIVATE_BPFFS:-}" ]; then
	exec env SL_PRIVATE_BPFFS=1 unshare --mount --propagation private \
		bash "$0" "$@"
fi
mount -t bpf bpf /sys/fs/bpf || { echo "not ok - cannot mount a private bpffs"; exit 1; }

build=${1:-build}
SL=$build/slicelimit
[ -x "$SL" ] || { echo "Bail out! $SL is not built (make all)"; exit 1; }
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3 || PY=python3
tmp=$(mktemp -d /tmp/slicelimit-cli.XXXXXX)
# the pins rules apply makes die with this mount namespace's bpffs
trap 'rm -rf "$tmp"' EXIT
failed=0 n=0

# TAP as tests/netns/lib.sh writes it (tests/run.sh counts these lines)
ok() { n=$((n + 1)); echo "ok - $1"; }
not_ok() {
	n=$((n + 1)); failed=1
	echo "not ok - $1"
	shift
	printf '%s\n' "$@" | sed 's/^/#   /'
}

# run ARGS...: $rc, $out (stdout), $err (stderr)
run() {
	rc=0
	"$SL" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

# pyjson EXPR: EXPR over d, stdout parsed as exactly one JSON document
pyjson() {
	"$PY" -c 'import json,sys
d = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$1" <"$tmp/out" 2>&1
}

# expect DESC WANT_RC EXPR ARGS...: exit WANT_RC and EXPR (over the one
# JSON document on stdout) is True
expect() {
	local desc=$1 want=$2 expr=$3 got
	shift 3
	run "$@"
	got=$(pyjson "$expr")
	if [ "$rc" = "$want" ] && [ "$got" = True ]; then
		ok "$desc"
	else
		not_ok "$desc" "slicelimit $*: exit $rc (want $want), check: $got" \
			"stdout: $out" "stderr: $(head -3 "$tmp/err")"
	fi
}

cat >"$tmp/rules.yaml" <<'EOF'
rules:
  - name: dns
    protocol: udp
    ports: 53
    limit: 100
    window: 60s
EOF
R=$tmp/rules.yaml
valid="d == {'file': '$R', 'valid': True, 'rules': 1, 'warnings': []}"

# ---- global options through getopt_long ----
expect "-jp before the command: pretty JSON (one document over several lines)" 0 \
	"$valid and len(open('$tmp/out').read().splitlines()) > 1" -jp rules check "$R"
expect "-vvj: a cluster of -v -v -j" 0 "$valid" -vvj rules check "$R"
expect "--json=yes" 0 "$valid" --json=yes rules check "$R"
expect "--js: getopt_long's unambiguous abbreviation of --json" 0 "$valid" --js rules check "$R"
expect "-jp after the command, as a word of its own" 0 \
	"$valid and len(open('$tmp/out').read().splitlines()) > 1" rules check "$R" -jp
expect "--json=yes after the command" 0 "$valid" rules check "$R" --json=yes
run -j --json=no rules check "$R"
if [ "$rc" = 0 ] && ! pyjson "d" >/dev/null 2>&1 && [ -n "$out" ]; then
	ok "--json=no turns an earlier -j off: no JSON"
else
	not_ok "--json=no turns an earlier -j off: no JSON" "exit $rc, stdout: $out"
fi
expect "--json=maybe: a usage error naming --json and yes or no (exit 2)" 2 \
	"'--json' in d['error'] and 'yes or no' in d['error']" -j --json=maybe rules check "$R"
# regression guards (these worked before too): the forms the tests and
# scripts use
expect "(unchanged) -j before, --json after the command still work" 0 \
	"$valid" -j rules check "$R" --json

# ---- version ----
sha=$(sha256sum "$build/slicelimit.bpf.o" | cut -c1-64)
fields="set(d) >= {'version', 'libbpf', 'libxdp', 'bpf_object_sha256'} and d['bpf_object_sha256'] == '$sha' and d['libbpf'].count('.') == 1 and d['version'] != ''"
expect "version -j: version, libbpf, libxdp, and the sha256 of build/slicelimit.bpf.o" 0 \
	"$fields" version -j
expect "--version -j: the same object" 0 "$fields" --version -j
expect "-Vj: the same object" 0 "$fields" -Vj
expect "version -p: pretty, the same fields" 0 "$fields" version -p
expect "version extra: a usage error (exit 2), one JSON object" 2 \
	"'extra' in d['error']" -j version extra

# ---- usage errors under -j: exactly one JSON object on stdout, exit 2 ----
expect "no command: {\"error\"} on stdout, exit 2" 2 "'no command' in d['error']" -j
expect "-jp bogus: unknown command 'bogus' (not '-jp')" 2 \
	"\"'bogus'\" in d['error']" -jp bogus
expect "unknown option before the command: an option, not a command" 2 \
	"\"unknown option '--bogus'\" in d['error']" -j --bogus status
expect "unknown option before the command, -j after it: still JSON" 2 \
	"\"unknown option '-x'\" in d['error']" -x status -j
expect "unknown long option of a command names it" 2 \
	"\"'--bogus'\" in d['error'] and d['error'].startswith('status')" -j status --bogus
expect "unknown short option of a command names it" 2 \
	"\"'-x'\" in d['error']" -j top -x
expect "missing value of a long option names it" 2 \
	"'--count needs a value' in d['error']" -j top --count
expect "missing value of a short option names it" 2 \
	"'-n needs a value' in d['error']" -j top -n
expect "a value given to a flag that takes none names it" 2 \
	"'--watch takes no value' in d['error']" -j top --watch=1
expect "an extra argument names it" 2 "\"'extra'\" in d['error']" -j stats extra
expect "rules without a subcommand: JSON" 2 "d['error'].startswith('rules')" -j rules
expect "replay --bogus: JSON" 2 "d['error'].startswith('replay')" -j replay --bogus
expect "-p: a usage error is one (pretty) object too" 2 \
	"'--count needs a value' in d['error']" -p events --count

# ---- numbers: range-checked, the error names the flag and its range ----
expect "attach --clients 4294967297: exit 2, --clients from 1 to 67108864 (was: 1)" 2 \
	"'--clients' in d['error'] and '1 to 67108864' in d['error']" \
	-j attach sl-no-such-dev --clients 4294967297
expect "query --port 4294967296: exit 2, --port from 0 to 65535 (was: 0)" 2 \
	"'--port' in d['error'] and '0 to 65535' in d['error']" \
	-j query 192.0.2.1 --port 4294967296
expect "top -n 4294967297: exit 2, -n from 1 to 67108864 (was: 1)" 2 \
	"'-n' in d['error'] and '1 to 67108864' in d['error']" -j top -n 4294967297
expect "top --count 4294967296: exit 2, --count from 1 to 4294967295 (was: 0, no limit)" 2 \
	"'--count' in d['error'] and '1 to 4294967295' in d['error']" \
	-j top --watch --count 4294967296
expect "events --count 18446744073709551616: exit 2, names the range" 2 \
	"'--count' in d['error'] and '1 to 18446744073709551615' in d['error']" \
	-j events --count 18446744073709551616
expect "events --timeout 400d: exit 2, --timeout from 1ms to 365d" 2 \
	"'--timeout' in d['error'] and '1ms to 365d' in d['error']" -j events --timeout 400d
expect "top --interval 2d: exit 2, --interval from 100ms to 1d" 2 \
	"'--interval' in d['error'] and '100ms to 1d' in d['error']" \
	-j top --watch --interval 2d

# ---- rules check: the messages name the file, the line and the field ----
printf 'rules:\n  - name: a\n    limit: 3\n    window: 1ms\n' >"$tmp/short.yaml"
expect "rules check, window: 1ms: exit 1, the window blamed at its line (4), not slices" 1 \
	"[(p['line'], p['rule'], p['field']) for p in d['problems']] == [(4, 'a', 'window')]" \
	-j rules check "$tmp/short.yaml"
cat >"$tmp/warn.yaml" <<'EOF'
rules:
  - name: all
    limit: 100
  - name: web
    protocol: tcp
    ports: 80
    limit: 10
  - name: dns
    ports: 53
    source: 192.0.2.0/24
    limit: 10
    action: shadow
  - name: zero
    protocol: udp
    ports: 0
    source: 198.51.100.0/24
    limit: 10
  - name: ping
    unit: bytes
    limit: 10
    source: 203.0.113.0/24
EOF
expect "rules check of valid rules that may not do what they say: exit 0, valid, a warning each (line, rule, field)" 0 \
	"d['valid'] and sorted((w['line'], w['rule'], w.get('field')) for w in d['warnings']) == [(4, 'web', None), (8, 'dns', None), (9, 'dns', 'ports'), (13, 'zero', None), (15, 'zero', 'ports'), (18, 'ping', None), (19, 'ping', 'unit')]" \
	-j rules check "$tmp/warn.yaml"
printf 'rules: %s\nhttp: { listen: off }\n' "$tmp/warn.yaml" >"$tmp/warn-config.yaml"
expect "run --check of a config whose rule file has warnings: exit 0, ok, the same 7 warnings" 0 \
	"d['ok'] and len(d['warnings']) == 7 and all(w['file'] == '$tmp/warn.yaml' for w in d['warnings'])" \
	-j run --check --config "$tmp/warn-config.yaml"

# ---- sync keygen and pubkey: a key pair, the secret 0600 and never
# overwritten, the public key printed again from it ----
expect "sync keygen --out F: exit 0, {identity_file, public_key} with 64 hex digits" 0 \
	"d['identity_file'] == '$tmp/node.identity' and len(d['public_key']) == 64 and int(d['public_key'], 16) >= 0" \
	-j sync keygen --out "$tmp/node.identity"
pub=$(pyjson "d['public_key']")
expect "sync pubkey F: the same public key again" 0 "d == {'public_key': '$pub'}" \
	-j sync pubkey "$tmp/node.identity"
if [ "$(stat -c %a "$tmp/node.identity")" = 600 ] &&
	[ "$(wc -c <"$tmp/node.identity")" = 65 ]; then
	ok "sync keygen: the secret key file is mode 0600, 64 hex digits and a newline"
else
	not_ok "sync keygen: the secret key file is mode 0600, 64 hex digits and a newline" \
		"$(stat -c %a "$tmp/node.identity") $(wc -c <"$tmp/node.identity")"
fi
expect "sync keygen onto an existing file: exit 1, the file kept" 1 \
	"'never overwritten' in d['error']" \
	-j sync keygen --out "$tmp/node.identity"
expect "sync pubkey of the file after the refused keygen: the key is unchanged" 0 \
	"d == {'public_key': '$pub'}" -j sync pubkey "$tmp/node.identity"
expect "sync keygen without --out: usage error, exit 2" 2 "'--out FILE' in d['error']" \
	-j sync keygen

# ---- run --check of the node's sync identity (its secret key): the file
# itself, root's, no access for group or others (checked on the open
# descriptor) ----
"$SL" sync keygen --out "$tmp/sync.key" >/dev/null
ln -s "$tmp/sync.key" "$tmp/sync.key.link"
key_config() {		# KEY_PATH: a config whose sync identity is KEY_PATH
	printf 'rules: %s\nhttp: { listen: off }\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n  identity_file: %s\n' \
		"$R" "$1" >"$tmp/key-config.yaml"
}
key_problem() {		# a Python test of the one problem, at sync.identity_file
	echo "not d['ok'] and [(p['line'], p['field']) for p in d['problems']] == [(6, 'sync.identity_file')] and '$1' in d['problems'][0]['message']"
}
key_config "$tmp/sync.key"
expect "run --check, sync identity root's own and 0600 (as sync keygen writes it): ok" 0 "d['ok']" \
	-j run --check --config "$tmp/key-config.yaml"
key_config "$tmp/sync.key.link"
expect "run --check, sync identity behind a symbolic link: exit 1, the problem names it" 1 \
	"$(key_problem "is a symbolic link: name the file itself")" \
	-j run --check --config "$tmp/key-config.yaml"
key_config "$tmp/sync.key"
chmod 0666 "$tmp/sync.key"
expect "run --check, sync identity mode 0666: exit 1, writable by every user" 1 \
	"$(key_problem "writable by every user (mode 0666)")" \
	-j run --check --config "$tmp/key-config.yaml"
chmod 0600 "$tmp/sync.key"
chown nobody "$tmp/sync.key"
expect "run --check, sync identity owned by nobody: exit 1, its owner named" 1 \
	"$(key_problem "owned by uid $(id -u nobody)")" \
	-j run --check --config "$tmp/key-config.yaml"
chown root "$tmp/sync.key"

# ---- --pretty and a stream: top --watch stays one object a line ----
if "$SL" rules apply "$R" >/dev/null 2>"$tmp/err"; then
	run -p top --watch --count 2 --interval 100ms
	lines=$("$PY" -c 'import json,sys
ls = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
print(len(ls) if all("clients" in o for o in ls) else "bad")' "$tmp/out" 2>&1)
	if [ "$rc" = 0 ] && [ "$lines" = 2 ]; then
		ok "-p top --watch --count 2: two lines, each one whole JSON object"
	else
		not_ok "-p top --watch --count 2: two lines, each one whole JSON object" \
			"exit $rc, lines: $lines" "stdout: $out"
	fi
	expect "(unchanged) -p stats (one shot): pretty, over several lines" 0 \
		"'rules' in d and len(open('$tmp/out').read().splitlines()) > 1" -p stats
else
	not_ok "rules apply on this run's bpffs, to have something to watch" "$(cat "$tmp/err")"
fi

echo "# test_cli: $n checks, $([ "$failed" = 0 ] && echo "all passed" || echo "some failed")"
exit "$failed"
