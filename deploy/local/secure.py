"""The secured stack's certificates and passwords (`RINGTAIL_STACK_SECURE=1`), made once per run directory
under `<run dir>/secure/` with openssl: a certificate authority of the stack's own, one server certificate
naming every address the stack listens on (hostname verification stays on), a PKCS12 keystore of it for
the JVM services, a client certificate (`CN=ringtail`) every service requires of its clients (mutual TLS,
as many production clusters do), and a random password per account, each in a file of its own (mode
0600) that clients are pointed at (`password_file`), so no password is ever on a command line or in
stack.json.

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
CLIENT = "ringtail"  # the client certificate's common name: PostgreSQL maps it to its user of that name


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
    def client_certificate(self) -> tuple[Path, Path]:
        """The clients' certificate and key (PEM)."""
        return self.dir / "client.pem", self.dir / "client.key"

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
        """The authority, the server and the client certificates, unless made before for these addresses."""
        names = ",".join(f"IP:{a}" if _is_ip(a) else f"DNS:{a}" for a in ["localhost", *self.addresses])
        stamp = self.dir / "server.names"
        made = (self.keystore, self.client_certificate[0])
        if stamp.exists() and stamp.read_text() == names and all(path.exists() for path in made):
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        (self.dir / "trust.p12").unlink(missing_ok=True)  # of the authority made before
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "365", "-subj", "/CN=ringtail stack CA",
                 "-keyout", str(self.dir / "ca.key"), "-out", str(self.ca))
        # The brokers' and nodes' own connections to each other present the server certificate.
        key, cert = self.sign("server", "/CN=ringtail stack", f"subjectAltName={names}\n"
                              "extendedKeyUsage=serverAuth,clientAuth\n")
        self.sign("client", f"/CN={CLIENT}", "extendedKeyUsage=clientAuth\n")
        self.password(KEYSTORE)
        _openssl("pkcs12", "-export", "-in", str(cert), "-inkey", str(key), "-name", "server",
                 "-out", str(self.keystore), "-passout", f"file:{self.password_file(KEYSTORE)}")
        stamp.write_text(names)

    def sign(self, name: str, subject: str, extensions: str, days: int = 365) -> tuple[Path, Path]:
        """A key and a certificate the stack's authority signs, as `<name>.key` and `<name>.pem` (valid for
        `days`; a negative number makes one that has expired)."""
        key, request, cert, ext = (self.dir / f"{name}.{suffix}" for suffix in ("key", "csr", "pem", "ext"))
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", str(key), "-out", str(request))
        key.chmod(0o600)  # libpq takes no client key others can read
        ext.write_text(extensions)
        _openssl("x509", "-req", "-in", str(request), "-CA", str(self.ca), "-CAkey", str(self.dir / "ca.key"),
                 "-CAcreateserial", "-days", str(days), "-extfile", str(ext), "-out", str(cert))
        return key, cert

    def truststore(self, keytool: str) -> Path:
        """The authority as a PKCS12 truststore, for Cassandra to verify its clients' certificates."""
        store = self.dir / "trust.p12"
        if not store.exists():
            subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", str(self.ca),
                            "-keystore", str(store), "-storetype", "PKCS12",
                            "-storepass:file", str(self.password_file(KEYSTORE))],
                           check=True, capture_output=True, text=True)
        return store

    def describe(self) -> dict:
        """What clients of the stack set (the `cassandra_security` and `kafka_security` settings)."""
        for account in (CASSANDRA_CLIENT, KAFKA_CLIENT, REGISTRY_CLIENT, POSTGRES_CLIENT, MARIADB_CLIENT):
            self.password(account)
        cert, key = self.client_certificate
        tls = {"tls_ca": str(self.ca), "tls_cert": str(cert), "tls_key": str(key)}
        return {
            "ca": str(self.ca),
            "cassandra": {"username": CASSANDRA_USER, "password_file": str(self.password_file(CASSANDRA_CLIENT)),
                          "tls": True, **tls},
            "kafka": {"protocol": "SASL_SSL", "sasl_mechanism": KAFKA_MECHANISM, "sasl_username": KAFKA_USER,
                      "sasl_password_file": str(self.password_file(KAFKA_CLIENT)), **tls},
            "registry": {"username": REGISTRY_USER, "password_file": str(self.password_file(REGISTRY_CLIENT)), **tls},
            # The sinks' `password_file` (their DSNs in stack.json ask for TLS, verifying the server, and
            # present the client certificate).
            "postgres": {"password_file": str(self.password_file(POSTGRES_CLIENT))},
            "mariadb": {"password_file": str(self.password_file(MARIADB_CLIENT))},
        }


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False
