"""The connector as users run it (`python -m connector run --config FILE`, a real process that can be
killed) beside the local stack, and the peak memory of a process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from connector.checkpoint import PositionStore
from connector.commitlog import Position
from deploy.local.endpoints import ROOT, Stack


class ConnectorProcess:
    def __init__(self, stack: Stack, state_dir: Path, prefix: str, **settings) -> None:
        """`settings`: connector settings added to (or replacing) the test defaults below."""
        self.state_dir = state_dir
        self.prefix = prefix
        self.settings = {
            "cdc_raw": stack.cdc_raw, "state_dir": state_dir,
            "cassandra_hosts": stack.cassandra_host, "cassandra_port": stack.cassandra_port,
            "kafka_bootstrap_servers": stack.kafka_bootstrap, "registry_url": stack.registry_url,
            "topic_prefix": prefix, "topic_partitions": 3, "metrics_port": 0, "poll_interval": 0.1,
            "commit_interval": 0.2, "log_format": "text", **settings,
        }
        self.cdc_raw = Path(self.settings["cdc_raw"])
        self.config = state_dir.parent / f"{state_dir.name}.yaml"
        # A nested setting (`kafka_security`) as JSON, which YAML reads.
        self.config.write_text("".join(f"{key}: {json.dumps(value) if isinstance(value, dict) else value}\n"
                                       for key, value in self.settings.items()))
        self.log = state_dir.parent / f"{state_dir.name}.log"
        self.process: subprocess.Popen | None = None

    def start_from_now(self) -> None:
        """Position the connector at the end of what is durable now: older segments belong to other
        tests (and to tables dropped since), and are released unread at its start. With nothing durable
        (every segment released, the current one without CDC data yet) there is nothing to skip."""
        PositionStore(self.state_dir / "position.json").start_now(self.cdc_raw)

    def seed(self, position: Position) -> None:
        """Start after `position`, as a connector that committed it; older segments are released unread."""
        PositionStore(self.state_dir / "position.json").start_at(position)

    def start(self) -> None:
        log = open(self.log, "a")
        self.process = subprocess.Popen([sys.executable, "-m", "connector", "run", "--config", str(self.config)],
                                        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def committed(self) -> Position | None:
        return PositionStore(self.state_dir / "position.json").load().position

    def metrics(self) -> dict[str, float]:
        """The unlabelled samples of /metrics (needs `metrics_port`), by name."""
        url = f"http://127.0.0.1:{self.settings['metrics_port']}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        samples = (line.split() for line in text.splitlines() if line and not line.startswith("#"))
        return {parts[0]: float(parts[1]) for parts in samples if len(parts) == 2 and "{" not in parts[0]}

    def ready(self) -> bool:
        """Whether /ready answers 200: the connector started reading (needs `metrics_port`)."""
        try:
            url = f"http://127.0.0.1:{self.settings['metrics_port']}/ready"
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def peak_rss(self) -> int | None:
        """The process's resident memory high-water mark (VmHWM), in bytes."""
        return peak_rss(self.process.pid)

    def cpu_seconds(self) -> float | None:
        """CPU time the process has used so far (user and system), in seconds."""
        return cpu_seconds(self.process.pid)


def _proc(pid: int | None, name: str) -> str | None:
    """A file of the process's /proc directory, or None when the process is gone."""
    if pid is None:
        return None
    try:
        return Path(f"/proc/{pid}/{name}").read_text()
    except OSError:
        return None


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a process, or None when it is gone."""
    stat = _proc(pid, "stat")
    if stat is None:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss(pid: int | None) -> int | None:
    """VmHWM of a process in bytes, or None when it is gone."""
    status = _proc(pid, "status")
    if status is None:
        return None
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")), None)
