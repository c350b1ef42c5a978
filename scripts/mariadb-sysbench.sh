#!/usr/bin/env bash
# MariaDB under sysbench OLTP, with glibc's locks and with scalelock's (libscalelock_preload.so).
#
# Starts a private MariaDB (own datadir from mariadb-install-db, unix socket in a temp directory,
# no TCP at all), prepares sysbench's oltp tables, runs oltp_read_only and oltp_read_write at
# several thread counts once with plain glibc and once with LD_PRELOAD=libscalelock_preload.so
# (which server goes first alternates from point to point, and every run waits until both
# servers are idle), and prints tps, p95 and max latency and errors side by side (each run's
# line also gives the server's CPU time per transaction), then (with --lockstat) the top of
# scalelock's lockstat table. One invocation runs each point in one order; rounds in both
# orders (`scalelock bench --workload mariadb-sysbench --repeat 2`) balance it. The servers are
# stopped and the temp directory removed at the end, also on failure or Ctrl-C. It installs
# nothing.
#
#   scripts/mariadb-sysbench.sh [--quick] [--threads "1 2 4 8"] [--time SECONDS]
#                               [--locks "glibc scalelock"] [--lib PATH] [--results FILE]
#                               [--histograms DIR] [--lockstat]
#
# --quick        CI integration test: 1 table of 10000 rows, threads "1 4", 4 s per run.
# --lockstat     the library's servers record lockstat (SCALELOCK_LOCKSTAT=1) and the table's
#                top is printed at the end. Off by default: recording counts every acquisition
#                and times every hold, which glibc's server does not pay, so the tps columns
#                compare the locks only without it.
# --results FILE one line per run: workload lock threads tps p95_ms max_ms errors transactions
#                server_cpu_ms (the server process's user + system CPU time during the run, all
#                its threads: with tps, what a transaction costs the server)
# --histograms DIR  sysbench's latency histogram of each run, in DIR/WORKLOAD-LOCK-THREADS.txt
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
histograms=""
lockstat=0

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; threads="1 4"; run_time=4; tables=1; table_size=10000 ;;
        --threads) threads="$2"; shift ;;
        --time) run_time="$2"; shift ;;
        --locks) locks="$2"; shift ;;
        --lib) lib="$2"; shift ;;
        --results) results="$2"; shift ;;
        --histograms) histograms="$2"; shift ;;
        --lockstat) lockstat=1 ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
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
declare -A server_pid=()

# stop_server LOCK
stop_server() {
    local lock="$1" pid="${server_pid[$1]:-}"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        mariadb-admin --no-defaults --socket="$tmp/sock-$lock" -uroot shutdown >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "mariadb-sysbench: server $pid ($lock) did not stop; killing it" >&2
            kill -9 "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    fi
    server_pid[$lock]=""
}
cleanup() {
    for lock in "${!server_pid[@]}"; do stop_server "$lock"; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

clk_tck="$(getconf CLK_TCK)"
user_opt=()
if [ "$(id -u)" = 0 ]; then user_opt=(--user=root); fi

echo "== mariadb-sysbench: $("$mariadbd_bin" --version | head -1)"
echo "   $(sysbench --version); threads: $threads; ${run_time}s per run; $tables table(s) of $table_size rows"
echo "   library: ${lib:-none}; lockstat: $([ "$lockstat" = 1 ] && echo on || echo off); temp dir: $tmp"

mariadb-install-db --no-defaults --datadir="$tmp/data-first" "${user_opt[@]}" --skip-test-db \
    --auth-root-authentication-method=normal >"$tmp/install.log" 2>&1 || {
    echo "mariadb-sysbench: mariadb-install-db failed:" >&2
    tail -20 "$tmp/install.log" >&2
    exit 1
}

# start_server LOCK: starts a mariadbd on datadir data-LOCK and socket sock-LOCK, with glibc's
# locks (no preload) or the library's.
start_server() {
    local lock="$1" sock="$tmp/sock-$1"
    local env=(env -u LD_PRELOAD)
    if [ "$lock" != glibc ]; then
        env=(env -u SCALELOCK_LOCKSTAT LD_PRELOAD="$lib" SCALELOCK_LOCK="$lock")
        if [ "$lockstat" = 1 ]; then
            env+=(SCALELOCK_LOCKSTAT=1 SCALELOCK_LOCKSTAT_FILE="$tmp/lockstat-$lock.txt"
                  SCALELOCK_LOCKSTAT_TOP=15)
        fi
    fi
    "${env[@]}" "$mariadbd_bin" --no-defaults "${user_opt[@]}" --datadir="$tmp/data-$lock" \
        --socket="$sock" --pid-file="$tmp/pid-$lock" --skip-networking --bind-address=127.0.0.1 \
        --log-error="$tmp/error-$lock.log" --innodb-buffer-pool-size=256M \
        --innodb-log-file-size=64M --innodb-flush-log-at-trx-commit=2 --skip-log-bin \
        --max-connections=300 --max-prepared-stmt-count=100000 >"$tmp/server-$lock.out" 2>&1 &
    server_pid[$lock]=$!
    for _ in $(seq 1 600); do
        if mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "${server_pid[$lock]}" 2>/dev/null; then break; fi
        sleep 0.1
    done
    echo "mariadb-sysbench: mariadbd ($lock) did not start:" >&2
    tail -30 "$tmp/error-$lock.log" "$tmp/server-$lock.out" >&2
    exit 1
}

# check_alive LOCK: fails the script if that server has died.
check_alive() {
    if ! kill -0 "${server_pid[$1]}" 2>/dev/null; then
        echo "mariadb-sysbench: mariadbd ($1) died:" >&2
        tail -30 "$tmp/error-$1.log" "$tmp/server-$1.out" >&2
        exit 1
    fi
}

# sb LOCK ARGS..: sysbench against that lock's server.
sb() {
    local lock="$1"
    shift
    sysbench "$@" --db-driver=mysql --mysql-socket="$tmp/sock-$lock" --mysql-user=root \
        --mysql-db=sbtest --tables="$tables" --table-size="$table_size"
}

failed=0
declare -A tps p95 maxl errs

# run_one LOCK WORKLOAD THREADS
run_one() {
    local lock="$1" w="$2" t="$3" out rc=0
    check_alive "$lock"
    local cpu0 cpu_ms
    cpu0="$(cpu_ticks "${server_pid[$lock]}")"
    out="$(sb "$lock" "$w" --threads="$t" --time="$run_time" --events=0 --percentile=95 \
        --report-interval=0 --histogram="$([ -n "$histograms" ] && echo on || echo off)" run 2>&1)" || rc=$?
    cpu_ms=$(( ($(cpu_ticks "${server_pid[$lock]}") - cpu0) * 1000 / clk_tck ))
    if (( cpu_ms < 0 )); then cpu_ms=0; fi   # the server is gone (check_alive reports it)
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
    local total
    total="$(awk '/transactions:/ {print $2}' <<<"$out")"
    printf '   %-16s %-10s %3s threads: %10s tps  p95 %8s ms  max %9s ms  errors %s  server CPU %s us/trx\n' \
        "$w" "$lock" "$t" "${tps[$key]}" "${p95[$key]}" "${maxl[$key]}" "${errs[$key]}" \
        "$(( cpu_ms * 1000 / (total > 0 ? total : 1) ))"
    if [ -n "$results" ]; then
        echo "$w $lock $t ${tps[$key]} ${p95[$key]} ${maxl[$key]} ${errs[$key]} $total $cpu_ms" >>"$results"
    fi
    if [ -n "$histograms" ]; then
        mkdir -p "$histograms"
        awk '/Latency histogram/ {on=1; next} on && /\|/ {print} on && !/\|/ && NF==0 {on=0}' \
            <<<"$out" >"$histograms/$w-$lock-$t.txt"
    fi
}

# cpu_ticks PID: the process's user + system CPU time so far, in clock ticks (0 once it is gone).
cpu_ticks() {
    local stat f
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || { echo 0; return; }
    # The fields after the command name (which may hold spaces): utime and stime are the 12th
    # and 13th of them.
    read -r -a f <<<"${stat##*) }"
    echo $((f[11] + f[12]))
}

# settle: waits until no server is busy (each used less than a tenth of a CPU over half a
# second), for 60 s at most. A server goes on working for seconds after a run (InnoDB purges
# and flushes after oltp_read_write), and the next run, on the other server, shared the
# machine with that work: the server that ran first at a point measured ahead of the other,
# whichever lock it had.
settle() {
    local quiet=$(( $(getconf CLK_TCK) / 20 )) lock busy
    local -A before=()
    for _ in $(seq 1 120); do
        for lock in $locks; do before[$lock]="$(cpu_ticks "${server_pid[$lock]}")"; done
        sleep 0.5
        busy=0
        for lock in $locks; do
            if (( $(cpu_ticks "${server_pid[$lock]}") - ${before[$lock]} > quiet )); then busy=1; fi
        done
        if [ "$busy" = 0 ]; then return 0; fi
    done
    echo "mariadb-sysbench: a server was still busy after 60 s; measuring anyway" >&2
}

# Prepare the tables once, then give every lock its own copy of the same datadir, and run both
# servers side by side: runs alternate between them point by point, each on a settled machine
# (see settle), and the server that runs first alternates from point to point (the first lock
# of --locks at the first point), so that load drifting on a shared machine hits both alike.
server_pid[prep]=""
mv "$tmp/data-first" "$tmp/data-prep"
start_server prep
mariadb --no-defaults --socket="$tmp/sock-prep" -uroot -e "CREATE DATABASE sbtest" >/dev/null
sb prep oltp_read_write --threads=2 prepare >"$tmp/prepare.log" 2>&1 || {
    echo "mariadb-sysbench: sysbench prepare failed:" >&2
    tail -20 "$tmp/prepare.log" >&2
    exit 1
}
stop_server prep
for lock in $locks; do
    cp -a "$tmp/data-prep" "$tmp/data-$lock"
    start_server "$lock"
done
rm -rf "$tmp/data-prep"
echo "   servers: $(for l in $locks; do printf '%s (pid %s) ' "$l" "${server_pid[$l]}"; done)"

point=0
for w in oltp_read_only oltp_read_write; do
    for lock in $locks; do
        # A short warm-up so every server starts from a warm buffer pool.
        sb "$lock" "$w" --threads=2 --time=1 run >/dev/null 2>&1 || true
    done
    for t in $threads; do
        order=()
        for lock in $locks; do
            if (( point % 2 )); then order=("$lock" "${order[@]}"); else order+=("$lock"); fi
        done
        for lock in "${order[@]}"; do
            settle
            run_one "$lock" "$w" "$t"
        done
        point=$((point + 1))
    done
done
for lock in $locks; do
    check_alive "$lock"
    stop_server "$lock"   # the library writes its lockstat table as the server exits
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
        echo "== lockstat, mariadbd under $lock (whole run, both workloads), top lines"
        head -n 25 "$tmp/lockstat-$lock.txt"
    elif [ "$lock" != glibc ] && [ "$lockstat" = 1 ]; then
        echo
        echo "(no lockstat table: this build of libscalelock_preload.so writes none)"
    fi
done

if [ "$failed" != 0 ]; then
    echo "mariadb-sysbench: FAILED (see the errors above)" >&2
    exit 1
fi
echo "mariadb-sysbench: ok"
