# A throwaway clickhouse-server for the bench scripts (sourced): its own
# config and data under $T/ch (T: the caller's temp dir), free ports on
# 127.0.0.1, a `default` user without a password; CH_PID set for the
# caller's cleanup to stop, CH the base URL, chq SQL [DATABASE] to query.
# Needs: T, and the caller's EXIT trap to call ch_stop when CH_PID is set.
# CLICKHOUSE_SERVER: the server binary (default /usr/sbin/clickhouse-server).
CHS=${CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
ch_stop() {  # SIGTERM, up to 10 s, then SIGKILL
  kill "$CH_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$CH_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$CH_PID" 2>/dev/null || true
  wait "$CH_PID" 2>/dev/null || true
  CH_PID=''
}
free_port() {  # the first port from $1 up that nothing answers on
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

# --- the throwaway server ---
HTTP_PORT=$(free_port 28123)
TCP_PORT=$(free_port $((HTTP_PORT + 1)))
mkdir -p "$T/ch/data" "$T/ch/tmp"
cat >"$T/ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$T/ch/server.log</log><errorlog>$T/ch/server.err.log</errorlog></logger>
  <http_port>$HTTP_PORT</http_port>
  <tcp_port>$TCP_PORT</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$T/ch/data/</path>
  <tmp_path>$T/ch/tmp/</tmp_path>
  <users_config>$T/ch/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
</yandex>
EOF
cat >"$T/ch/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>10000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
EOF
"$CHS" --config-file="$T/ch/config.xml" >"$T/ch/stdout" 2>&1 &
CH_PID=$!
CH=http://127.0.0.1:$HTTP_PORT
for _ in $(seq 1 300); do
  [ "$(curl -s "$CH/ping" 2>/dev/null)" = "Ok." ] && break
  kill -0 "$CH_PID" 2>/dev/null || { echo "clickhouse-server exited:"; tail -20 "$T/ch/stdout" "$T/ch/server.err.log"; exit 1; }
  sleep 0.1
done
chq() {  # chq SQL [DATABASE]: one query, its answer on stdout; a failure stops the script
  curl -sS --fail-with-body "$CH/?database=${2:-default}" --data-binary "$1"
}
