"""The secured stack's certificates and passwords (`RINGTAIL_STACK_SECURE=1`), made once per run directory
under `<run dir>/secure/` with openssl: a certificate authority of the stack's own, one server certificate
naming every address the stack listens on (hostname verification stays on), a PKCS12 keystore of it for
the JVM services, and a random password per account, each in a file of its own (mode 0600) that clients
are pointed at (`password_file`), so no password is ever on a command line or in stack.json.

Accounts (each password's file is named after its service and user): Cassandra's `ringtail` role (the
stack itself uses the default `cassandra` superuser to create it), Kafka's SCRAM users `ringtail` (clients)
and `admin` (between brokers and for the stack's own questions), the registry gate's `ringtail`,
PostgreSQL's and MariaDB's `ringtail` (TLS required for them too);
`keystore` protects the keystore.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
import subprocess
from pathlib import Path

CASSANDRA_USER = "ringtail"
CASSANDRA_ADMIN = ("cassandra", "cassandra")  # the superuser every new cluster has
KAFKA_USER = "ringtail"
KAFKA_ADMIN = "admin"
# The password files' names.
CASSANDRA_CLIENT, KAFKA_CLIENT, KAFKA_BROKERS = "cassandra-ringtail", "kafka-ringtail", "kafka-admin"
REGISTRY_CLIENT, POSTGRES_CLIENT, MARIADB_CLIENT = "registry-ringtail", "postgres-ringtail", "mariadb-ringtail"
KEYSTORE = "keystore"
KAFKA_MECHANISM = "SCRAM-SHA-512"
REGISTRY_USER = "ringtail"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, text=True)


class Secured:
    def __init__(self, run_dir: Path, addresses: list[str]) -> None:
        self.dir = run_dir / "secure"
        self.addresses = addresses

    @property
    def ca(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def keystore(self) -> Path:
        """The server certificate and key as PKCS12, for Cassandra and Kafka."""
        return self.dir / "server.p12"

    def password_file(self, account: str) -> Path:
        return self.dir / f"{account}.password"

    def password(self, account: str) -> str:
        """`account`'s password, made at the first ask."""
        path = self.password_file(account)
        if not path.exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(18))
        return path.read_text()

    def make(self) -> None:
        """The authority and the server certificate, unless made before for these addresses."""
        names = ",".join(f"IP:{a}" if _is_ip(a) else f"DNS:{a}" for a in ["localhost", *self.addresses])
        stamp = self.dir / "server.names"
        if stamp.exists() and stamp.read_text() == names and self.keystore.exists():
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        ca_key, key, request, cert = (self.dir / n for n in ("ca.key", "server.key", "server.csr", "server.pem"))
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "365", "-subj", "/CN=ringtail stack CA",
                 "-keyout", str(ca_key), "-out", str(self.ca))
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=ringtail stack", "-keyout", str(key),
                 "-out", str(request))
        extensions = self.dir / "server.ext"
        extensions.write_text(f"subjectAltName={names}\nextendedKeyUsage=serverAuth,clientAuth\n")
        _openssl("x509", "-req", "-in", str(request), "-CA", str(self.ca), "-CAkey", str(ca_key), "-CAcreateserial",
                 "-days", "365", "-extfile", str(extensions), "-out", str(cert))
        self.password(KEYSTORE)
        _openssl("pkcs12", "-export", "-in", str(cert), "-inkey", str(key), "-name", "server",
                 "-out", str(self.keystore), "-passout", f"file:{self.password_file(KEYSTORE)}")
        stamp.write_text(names)

    def describe(self) -> dict:
        """What clients of the stack set (the `cassandra_security` and `kafka_security` settings)."""
        for account in (CASSANDRA_CLIENT, KAFKA_CLIENT, REGISTRY_CLIENT, POSTGRES_CLIENT, MARIADB_CLIENT):
            self.password(account)
        return {
            "ca": str(self.ca),
            "cassandra": {"username": CASSANDRA_USER, "password_file": str(self.password_file(CASSANDRA_CLIENT)),
                          "tls": True, "tls_ca": str(self.ca)},
            "kafka": {"protocol": "SASL_SSL", "sasl_mechanism": KAFKA_MECHANISM, "sasl_username": KAFKA_USER,
                      "sasl_password_file": str(self.password_file(KAFKA_CLIENT)), "tls_ca": str(self.ca)},
            "registry": {"username": REGISTRY_USER, "password_file": str(self.password_file(REGISTRY_CLIENT)),
                         "tls_ca": str(self.ca)},
            # The sinks' `password_file` (their DSNs in stack.json ask for TLS, verifying the server).
            "postgres": {"password_file": str(self.password_file(POSTGRES_CLIENT))},
            "mariadb": {"password_file": str(self.password_file(MARIADB_CLIENT))},
        }


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False
