"""Ringtail for Spark executors that do not have it installed: its Python packages, its native core and
every dependency its executors import, as one archive Spark hands to each executor (`spark.archives`,
unpacked as `./ringtail` in the executor's working directory and put on its Python workers' path).

The cluster's own Spark provides pyspark and py4j, so they are left out. The archive holds compiled
modules (the native core, pyarrow, pydantic-core …) built for this machine: executors need the same
platform and the same Python minor version as the process that packs it (as with PySpark's packed
virtual environments). Packing is done once per content: the archive's name carries a fingerprint of
every file in it, and one already made is used again.

`python -m spark.ship [--out DIR]` packs it and prints the `spark-submit` options that ship it.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as metadata
import importlib.util
import os
import re
import sys
import tarfile
from pathlib import Path

NAME = "ringtail"  # the directory executors unpack it to
# Spark's own, on every executor; a second copy would shadow the cluster's.
PROVIDED = frozenset({"pyspark", "py4j", "delta-spark"})
PACKAGES = ("schemas", "spark")  # what Spark's side of ringtail is: the contract and itself, no connector
KEEP = 3  # archives kept in the directory, the newest
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?[^;]*(?:;(.*))?$")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _needed(marker: str | None, extras: set[str]) -> bool:
    """Whether a requirement's marker asks for it: an `extra == "x"` one only with extra x; any other
    (python_version, sys_platform) is left to what pip installed here."""
    if not marker:
        return True
    wanted = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
    return not wanted or bool(set(map(_canonical, wanted)) & extras)


def dependencies(root: str = "ringtail", extras: tuple[str, ...] = ("spark",)) -> list[metadata.Distribution]:
    """The installed distributions `root` (with `extras`) needs at run time, recursively, but the ones
    Spark provides and `root` itself."""
    found: dict[str, metadata.Distribution] = {}
    pending = [(root, {_canonical(e) for e in extras})]
    while pending:
        name, wanted = pending.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a marker pip judged false here (another platform, another Python)
        for requirement in dist.requires or ():
            match = _REQUIREMENT.match(requirement)
            if match is None or not _needed(match.group(3), wanted):
                continue
            needed = _canonical(match.group(1))
            if needed in PROVIDED or needed in found or needed == _canonical(root):
                continue
            try:
                found[needed] = metadata.distribution(needed)
            except metadata.PackageNotFoundError:
                continue
            pending.append((needed, {_canonical(e) for e in (match.group(2) or "").split(",") if e.strip()}))
    return sorted(found.values(), key=lambda d: _canonical(d.metadata["Name"]))


def _own_files() -> list[tuple[Path, str]]:
    """ringtail's own modules and native core (an editable install's source tree, or site-packages),
    without the Rust crates' sources."""
    out = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ShipError(f"ringtail's package {package} is not importable here")
        top = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(top.rglob("*")):
            relative = path.relative_to(top.parent)
            if path.is_file() and "__pycache__" not in relative.parts and relative.parts[1:2] != ("native",):
                out.append((path, relative.as_posix()))
    return out


def _dist_files(dist: metadata.Distribution) -> list[tuple[Path, str]]:
    out = []
    for file in dist.files or ():
        path = Path(dist.locate_file(file))
        if path.is_file() and "__pycache__" not in file.parts and not str(file).startswith(".."):
            out.append((path, file.as_posix()))
    return out


class ShipError(RuntimeError):
    """ringtail cannot be packed from this environment."""


def contents() -> list[tuple[Path, str]]:
    """Every file of the archive: (where it is here, its name in the archive)."""
    files = _own_files()
    for dist in dependencies():
        files.extend(_dist_files(dist))
    return files


def fingerprint(files: list[tuple[Path, str]]) -> str:
    """Of every file's name, size and modification time: a rebuilt native core or an edited module
    makes a new archive."""
    digest = hashlib.sha256(f"{sys.version_info[:2]}{sys.platform}".encode())
    for path, name in sorted(files, key=lambda f: f[1]):
        stat = path.stat()
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def pack(directory: Path) -> Path:
    """The archive in `directory`, made unless one of the same content is there."""
    files = contents()
    version = metadata.version("ringtail")
    archive = directory / f"{NAME}-{version}-py{sys.version_info[0]}{sys.version_info[1]}-{fingerprint(files)}.tar.gz"
    if archive.exists():
        return archive
    directory.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(f".partial-{os.getpid()}")
    # Level 1: a fraction of the time of the default for most of its size saved.
    with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
        for path, name in files:
            tar.add(path, arcname=name, recursive=False)
    partial.replace(archive)
    for stale in sorted(directory.glob(f"{NAME}-*.tar.gz"), key=lambda a: a.stat().st_mtime)[:-KEEP]:
        stale.unlink(missing_ok=True)  # an older content's
    return archive


def spark_conf(archive: Path) -> dict[str, str]:
    """What ships `archive` to every executor, and puts it on its Python workers' path (the archive is
    unpacked in the executor's working directory, where its Python workers start)."""
    return {"spark.archives": f"{archive.resolve().as_uri()}#{NAME}", "spark.executorEnv.PYTHONPATH": NAME}


def default_directory() -> Path:
    """Where archives are kept between runs: $XDG_CACHE_HOME/ringtail (~/.cache/ringtail)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ringtail"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark.ship", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=default_directory(), help="where to write the archive")
    args = parser.parse_args(argv)
    try:
        archive = pack(args.out)
    except (ShipError, OSError) as exc:
        print(f"python -m spark.ship: {exc}", file=sys.stderr)
        return 2
    conf = spark_conf(archive)
    print(archive)
    print(f"spark-submit --archives '{conf['spark.archives']}' "
          f"--conf spark.executorEnv.PYTHONPATH={conf['spark.executorEnv.PYTHONPATH']} …", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
