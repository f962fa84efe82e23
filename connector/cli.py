"""Command line: `python -m connector run --config FILE` runs the connector;
`python -m connector dump SEGMENT ...` prints a segment's changes as JSON lines."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from connector.commitlog import CommitLogError, SchemaMismatch, SegmentReader, UnknownTable, skip_unknown_tables
from connector.commitlog.render import ChangeRenderer
from schemas.tables import DdlError, SchemaSnapshot, parse_ddl_file

DEFAULT_CASSANDRA_PORT = 9042


class CliError(Exception):
    """A problem worth one line on stderr and exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m connector", description="ringtail CDC connector")
    commands = parser.add_subparsers(dest="command", required=True)
    dump = commands.add_parser("dump", help="print the changes of one commit log segment as JSON lines")
    dump.add_argument("segment", help="CommitLog-<version>-<id>.log file")
    source = dump.add_mutually_exclusive_group(required=True)
    source.add_argument("--schema", metavar="FILE.cql", help="DDL as printed by DESCRIBE ... WITH INTERNALS")
    source.add_argument("--cassandra", metavar="HOST[:PORT]", help="read the schema from a live node")
    dump.add_argument("--config", metavar="FILE.yaml", type=Path,
                      help="with --cassandra: the connector's settings file, for its cassandra_security "
                           "(RINGTAIL_CONNECTOR_* variables override it)")
    dump.add_argument("--limit", type=int, metavar="BYTES",
                      help="read only sections ending at or before this offset (the _cdc.idx value)")
    dump.add_argument("--skip-unknown-tables", action="store_true",
                      help="skip (and report on stderr) mutations of tables missing from the schema")
    dump.add_argument("--decoder", choices=("native", "python"), default="native",
                      help="what decodes the segment: the native core (default) or the Python reference; "
                           "both print the same lines")
    dump.set_defaults(run=_dump)
    run = commands.add_parser("run", help="run the connector beside a Cassandra node")
    run.add_argument("--config", metavar="FILE.yaml", type=Path,
                     help="settings file; RINGTAIL_CONNECTOR_* environment variables override it")
    run.set_defaults(run=_run)
    ack = commands.add_parser("ack-lost", help="accept the loss of a segment that left cdc_raw unread, so "
                                               "reading goes on past it")
    ack.add_argument("segment", help="CommitLog-<version>-<id>.log, as the connector's error names it")
    ack.add_argument("--config", metavar="FILE.yaml", type=Path,
                     help="the connector's settings file (for its state_dir); RINGTAIL_CONNECTOR_* variables override "
                          "it")
    ack.set_defaults(run=_ack_lost)
    return parser


def _settings(args: argparse.Namespace):
    from pydantic import ValidationError

    from connector.config import load_settings

    try:
        return load_settings(args.config)
    except ValidationError as exc:
        raise CliError(f"invalid settings: {exc}") from None


def _ack_lost(args: argparse.Namespace) -> None:
    from connector.lost import LostSegments, UnknownLostSegment

    settings = _settings(args)
    try:
        lost = LostSegments(settings.state_dir / "lost").acknowledge(args.segment)
    except UnknownLostSegment as exc:
        raise CliError(str(exc)) from None
    print(f"acknowledged: {lost}; the connector reads past it")


def _run(args: argparse.Namespace) -> None:
    import logging

    from schemas.runtime.access import AccessError
    from connector.lock import AlreadyRunning
    from schemas.runtime.reach import AccessDenied
    from schemas.runtime.logs import setup_logging
    from connector.runner import Connector
    from schemas.runtime.signals import on_stop_signals

    settings = _settings(args)
    setup_logging(settings.log_level, settings.log_format)
    log = logging.getLogger("ringtail.connector")
    connector = Connector(settings)

    def stop(name: str) -> None:
        log.info("%s: stopping (waiting at most %.0f s for Kafka)", name, settings.shutdown_timeout)
        connector.stop()

    on_stop_signals(stop, lambda name: log.warning(
        "%s again: exiting at once; what was not committed is read again at the next start", name))
    try:
        connector.run()
    except (AlreadyRunning, AccessDenied, AccessError) as exc:
        raise CliError(str(exc)) from None


def _load_schema(args: argparse.Namespace) -> SchemaSnapshot:
    if args.schema:
        try:
            return parse_ddl_file(args.schema)
        except (OSError, DdlError) as exc:
            raise CliError(f"cannot read schema {args.schema}: {exc}") from None
    host, _, port = args.cassandra.partition(":")
    from cassandra.cluster import NoHostAvailable  # the driver is imported only when needed

    from schemas.runtime.access import AccessError
    from schemas.tables.loader import load_schema

    security = _settings(args).cassandra_security if args.config else None
    try:
        return load_schema(host, int(port) if port else DEFAULT_CASSANDRA_PORT, security)
    except NoHostAvailable as exc:
        raise CliError(f"cannot read the schema from Cassandra at {args.cassandra}: {exc}") from None
    except AccessError as exc:
        raise CliError(str(exc)) from None


def _dump(args: argparse.Namespace) -> None:
    schema = _load_schema(args)

    def skip(miss: UnknownTable | SchemaMismatch) -> None:
        skip_unknown_tables(miss)
        print(f"skipped: {miss}", file=sys.stderr)

    on_miss = skip if args.skip_unknown_tables else None
    renderer = ChangeRenderer(schema)
    write = sys.stdout.write
    if args.decoder == "native":
        try:
            from connector.native_changes import native_changes
        except ImportError as missing:
            raise CliError(f"the native core is missing ({missing}); use --decoder python, or reinstall ringtail "
                           "with a Rust toolchain") from None
        for change in native_changes(args.segment, schema, args.limit, on_miss):
            write(json.dumps(renderer.render(change, args.segment), ensure_ascii=False) + "\n")
        return
    with SegmentReader(args.segment, schema, limit=args.limit, on_schema_miss=on_miss) as reader:
        for change in reader.changes():
            renderer.schema = reader.schema
            write(json.dumps(renderer.render(change, args.segment), ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (CliError, CommitLogError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    return 0
