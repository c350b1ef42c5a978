#!/usr/bin/env bash
# MariaDB under sysbench OLTP, with glibc's locks and with scalelock's (libscalelock_preload.so).
#
# Starts a private MariaDB (own datadir from mariadb-install-db, unix socket in a temp directory,
# no TCP at all), prepares sysbench's oltp tables, runs oltp_read_only and oltp_read_write at
# several thread counts once with plain glibc and once with LD_PRELOAD=libscalelock_preload.so,
# and prints tps, p95 and max latency and errors side by side, then the top of scalelock's
# lockstat table (when the library writes one). The server is stopped and the temp directory
# removed at the end, also on failure or Ctrl-C. It installs nothing.
#
#   scripts/mariadb-sysbench.sh [--quick] [--threads "1 2 4 8"] [--time SECONDS]
#                               [--locks "glibc scalelock"] [--lib PATH] [--results FILE]
#
# --quick        CI integration test: 1 table of 10000 rows, threads "1 4", 4 s per run.
# --results FILE one line per run: workload lock threads tps p95_ms max_ms errors
#
# Exit status: 0 when every run finished without a sysbench error; 1 on any error (a sysbench
# run that exits non-zero or reports FATAL, a server that does not start or dies); 77 when
# mariadbd or sysbench is not installed (Debian packages mariadb-server and sysbench), after
# saying so. The "err" column counts the errors sysbench itself ignores and retries (InnoDB
# deadlocks of oltp_read_write, which happen with glibc's locks too): reported, not a failure.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
quick=0
threads="1 2 4 8 16 32"
run_time=20
tables=4
table_size=20000
locks="glibc scalelock"
lib="${SCALELOCK_PRELOAD_LIB:-}"
results=""

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; threads="1 4"; run_time=4; tables=1; table_size=10000 ;;
        --threads) threads="$2"; shift ;;
        --time) run_time="$2"; shift ;;
        --locks) locks="$2"; shift ;;
        --lib) lib="$2"; shift ;;
        --results) results="$2"; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "mariadb-sysbench: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

for tool in mariadbd mariadb-install-db mariadb-admin mariadb sysbench; do
    if ! command -v "$tool" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$tool" ]; then
        echo "mariadb-sysbench: SKIPPED: $tool is not installed (Debian packages mariadb-server, sysbench)"
        exit 77
    fi
done
mariadbd_bin="$(command -v mariadbd || echo /usr/sbin/mariadbd)"

if [ -z "$lib" ]; then
    for c in "$here/target/release/libscalelock_preload.so" "$here/target/debug/libscalelock_preload.so"; do
        if [ -f "$c" ]; then lib="$c"; break; fi
    done
fi
if [[ " $locks " == *" scalelock "* || " $locks " == *" spin "* ]] && [ ! -f "${lib:-/nonexistent}" ]; then
    echo "mariadb-sysbench: libscalelock_preload.so not found; run cargo build --release -p scalelock-preload or pass --lib" >&2
    exit 1
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/scalelock-mariadb.XXXXXX")"
sock="$tmp/mysqld.sock"
pidfile="$tmp/mysqld.pid"
server_pid=""

stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        mariadb-admin --no-defaults --socket="$sock" -uroot shutdown >/dev/null 2>&1 || kill "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$server_pid" 2>/dev/null; then
            echo "mariadb-sysbench: server $server_pid did not stop; killing it" >&2
            kill -9 "$server_pid" 2>/dev/null || true
        fi
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
cleanup() {
    stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

user_opt=()
if [ "$(id -u)" = 0 ]; then user_opt=(--user=root); fi

echo "== mariadb-sysbench: $("$mariadbd_bin" --version | head -1)"
echo "   $(sysbench --version); threads: $threads; ${run_time}s per run; $tables table(s) of $table_size rows"
echo "   library: ${lib:-none}; temp dir: $tmp"

mariadb-install-db --no-defaults --datadir="$tmp/data" "${user_opt[@]}" --skip-test-db \
    --auth-root-authentication-method=normal >"$tmp/install.log" 2>&1 || {
    echo "mariadb-sysbench: mariadb-install-db failed:" >&2
    tail -20 "$tmp/install.log" >&2
    exit 1
}

# start_server LOCK: starts mariadbd with glibc's locks (no preload) or the library's.
start_server() {
    local lock="$1"
    local env=(env -u LD_PRELOAD)
    if [ "$lock" != glibc ]; then
        env=(env LD_PRELOAD="$lib" SCALELOCK_LOCK="$lock" SCALELOCK_LOCKSTAT=1
             SCALELOCK_LOCKSTAT_FILE="$tmp/lockstat-$lock.txt" SCALELOCK_LOCKSTAT_TOP=15)
    fi
    "${env[@]}" "$mariadbd_bin" --no-defaults "${user_opt[@]}" --datadir="$tmp/data" \
        --socket="$sock" --pid-file="$pidfile" --skip-networking --bind-address=127.0.0.1 \
        --log-error="$tmp/error-$lock.log" --innodb-buffer-pool-size=256M \
        --innodb-log-file-size=64M --innodb-flush-log-at-trx-commit=2 --skip-log-bin \
        --max-connections=300 --max-prepared-stmt-count=100000 >"$tmp/server-$lock.out" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 600); do
        if mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
        sleep 0.1
    done
    echo "mariadb-sysbench: mariadbd ($lock) did not start:" >&2
    tail -30 "$tmp/error-$lock.log" >&2
    exit 1
}

sb_common=(--db-driver=mysql --mysql-socket="$sock" --mysql-user=root --mysql-db=sbtest
           --tables="$tables" --table-size="$table_size")

failed=0
declare -A tps p95 maxl errs

# run_one LOCK WORKLOAD THREADS
run_one() {
    local lock="$1" w="$2" t="$3" out rc=0
    out="$(sysbench "$w" "${sb_common[@]}" --threads="$t" --time="$run_time" --events=0 \
        --percentile=95 --report-interval=0 run 2>&1)" || rc=$?
    local key="$w/$lock/$t"
    if [ "$rc" != 0 ] || grep -q "FATAL" <<<"$out"; then
        echo "mariadb-sysbench: sysbench $w, $t threads, $lock failed (exit $rc):" >&2
        tail -20 <<<"$out" >&2
        failed=1
        tps[$key]="FAIL"; p95[$key]="-"; maxl[$key]="-"; errs[$key]="-"
        return
    fi
    tps[$key]="$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' <<<"$out")"
    p95[$key]="$(awk '/95th percentile:/ {print $3}' <<<"$out")"
    maxl[$key]="$(awk '/^ *max:/ {print $2; exit}' <<<"$out")"
    errs[$key]="$(awk '/ignored errors:/ {print $3}' <<<"$out")"
    printf '   %-16s %-10s %3s threads: %10s tps  p95 %8s ms  max %9s ms  errors %s\n' \
        "$w" "$lock" "$t" "${tps[$key]}" "${p95[$key]}" "${maxl[$key]}" "${errs[$key]}"
    if [ -n "$results" ]; then
        echo "$w $lock $t ${tps[$key]} ${p95[$key]} ${maxl[$key]} ${errs[$key]}" >>"$results"
    fi
}

prepared=0
for lock in $locks; do
    echo "== $lock"
    start_server "$lock"
    if [ "$prepared" = 0 ]; then
        mariadb --no-defaults --socket="$sock" -uroot -e "CREATE DATABASE sbtest" >/dev/null
        sysbench oltp_read_write "${sb_common[@]}" --threads=2 prepare >"$tmp/prepare.log" 2>&1 || {
            echo "mariadb-sysbench: sysbench prepare failed:" >&2
            tail -20 "$tmp/prepare.log" >&2
            exit 1
        }
        prepared=1
    fi
    for w in oltp_read_only oltp_read_write; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "mariadb-sysbench: mariadbd ($lock) died:" >&2
            tail -30 "$tmp/error-$lock.log" "$tmp/server-$lock.out" >&2
            exit 1
        fi
        # One short warm-up so both locks start from a warm buffer pool.
        sysbench "$w" "${sb_common[@]}" --threads=2 --time=1 run >/dev/null 2>&1 || true
        for t in $threads; do
            run_one "$lock" "$w" "$t"
        done
    done
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "mariadb-sysbench: mariadbd ($lock) died during the runs:" >&2
        tail -30 "$tmp/error-$lock.log" "$tmp/server-$lock.out" >&2
        failed=1
    fi
    stop_server
done

echo
echo "== MariaDB $("$mariadbd_bin" --version | awk '{print $3}'), sysbench OLTP: glibc vs scalelock"
locks_arr=($locks)
header="workload          thr"
for lock in "${locks_arr[@]}"; do header+="$(printf ' | %-9s tps   p95 ms   max ms  err' "$lock")"; done
echo "$header"
for w in oltp_read_only oltp_read_write; do
    for t in $threads; do
        line="$(printf '%-16s %4s' "$w" "$t")"
        for lock in "${locks_arr[@]}"; do
            key="$w/$lock/$t"
            line+="$(printf ' | %13s %8s %8s %4s' "${tps[$key]:--}" "${p95[$key]:--}" "${maxl[$key]:--}" "${errs[$key]:--}")"
        done
        echo "$line"
    done
done

for lock in $locks; do
    if [ -f "$tmp/lockstat-$lock.txt" ]; then
        echo
        echo "== lockstat, mariadbd under $lock (whole run), top lines"
        head -n 25 "$tmp/lockstat-$lock.txt"
    elif [ "$lock" != glibc ]; then
        echo
        echo "(no lockstat table: this build of libscalelock_preload.so writes none)"
    fi
done

if [ "$failed" != 0 ]; then
    echo "mariadb-sysbench: FAILED (see the errors above)" >&2
    exit 1
fi
echo "mariadb-sysbench: ok"
