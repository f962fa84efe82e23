"""The local stack as the benchmarks measure against it."""
from __future__ import annotations

import sys

from deploy.local.endpoints import Stack, connect_stack

# What deploy/local/test gives the tests' stacks (services that live minutes spend half the CPU without the
# JIT's optimising tier); under a benchmark's load it costs the other way: a node read a table through the
# Python driver at 75,000 rows/s with it and 116,000 without (bench/snapshot.py's floor).
_TESTS_JIT = "-XX:TieredStopAtLevel="


def stack_for_figures() -> Stack:
    """The running local stack (`StackUnavailable` when it is not), with a warning on stderr when its
    services run as the tests' do, without the JIT's optimising tier: every figure they take part in is
    then low."""
    stack = connect_stack()
    limited = [o for o in stack.jvm_options if o.startswith(_TESTS_JIT) and o != f"{_TESTS_JIT}4"]
    if limited:
        print(f"warning: the stack's services run with {' '.join(limited)} (the tests' setting): the figures of"
              " Cassandra, Kafka and the registry are low; for figures to quote, stop the stack and start it with"
              " deploy/local/start, RINGTAIL_STACK_JVM_OPTIONS unset", file=sys.stderr, flush=True)
    return stack
