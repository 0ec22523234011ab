#!/usr/bin/env bash
# Makes a throwaway PKI for the TLS tests in DIR (OpenSSL's command line):
#   ca.pem, ca.key                 the test CA
#   server.pem, server.key         the broker: CN=localhost, SAN localhost and 127.0.0.1, by the CA
#   client.pem, client.key         a client certificate (CN=alice) by the CA
#   rogue-ca.pem                   another CA, which nothing trusts
#   rogue-client.pem, rogue-client.key   a client certificate (CN=mallory) by the rogue CA
#   rogue-server.pem, rogue-server.key   a broker certificate by the rogue CA
# Keys are EC P-256, certificates valid for 2 days.
#   tests/kafka_e2e/test_ca.sh DIR
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
ossl() { openssl "$@" 2>/dev/null; }
ca() {  # NAME SUBJECT
  ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$2" \
    -keyout "$1.key" -out "$1.pem"
}
leaf() {  # NAME CA SUBJECT SAN
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" -keyout "$1.key" -out "$1.csr"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$4" >"$1.ext"
  ossl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}
ca ca "rdmq test CA"
ca rogue-ca "rogue CA"
leaf server ca localhost "DNS:localhost,IP:127.0.0.1"
leaf client ca alice "DNS:alice"
leaf rogue-client rogue-ca mallory "DNS:mallory"
leaf rogue-server rogue-ca localhost "DNS:localhost,IP:127.0.0.1"
