#!/usr/bin/env bash
# Makes sure PostgreSQL and NATS (with JetStream) run on this machine, installing them
# with apt-get when absent, and that Ghost's database role exists:
#   role ghost / password ghost (CREATEDB), database ghost.
# Safe to run again and again.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

apt_install() {
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  for _ in $(seq 1 60); do
    if port_open "$1"; then return 0; fi
    sleep 0.5
  done
  echo "services.sh: nothing answers on 127.0.0.1:$1 ($2)" >&2
  return 1
}

# --- PostgreSQL -------------------------------------------------------------------
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  apt_install postgresql
fi
if ! port_open 5432; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start
fi
wait_port 5432 PostgreSQL

# Run SQL as a superuser: over TCP where trust auth allows it, else as the postgres user.
as_superuser() {
  if psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'SELECT 1' >/dev/null 2>&1; then
    psql -h 127.0.0.1 -U postgres -d postgres -v ON_ERROR_STOP=1 -Atq "$@"
  else
    $SUDO runuser -u postgres -- psql -d postgres -v ON_ERROR_STOP=1 -Atq "$@"
  fi
}
if [ "$(as_superuser -c "SELECT 1 FROM pg_roles WHERE rolname = 'ghost'")" != "1" ]; then
  as_superuser -c "CREATE ROLE ghost LOGIN PASSWORD 'ghost' CREATEDB"
fi
if [ "$(as_superuser -c "SELECT 1 FROM pg_database WHERE datname = 'ghost'")" != "1" ]; then
  as_superuser -c "CREATE DATABASE ghost OWNER ghost"
fi

# --- NATS with JetStream ------------------------------------------------------------
if ! [ -x /usr/sbin/nats-server ] && ! command -v nats-server >/dev/null 2>&1; then
  apt_install nats-server
fi
if ! port_open 4222; then
  nats_bin=$(command -v nats-server || echo /usr/sbin/nats-server)
  $SUDO mkdir -p /var/lib/nats-server
  $SUDO start-stop-daemon --start --oknodo --background --exec "$nats_bin" -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server
fi
wait_port 4222 NATS
echo "services.sh: PostgreSQL and NATS are up"
