"""The local stack: `stack.py` starts and stops the services; `endpoints` finds a running stack and
`processes` runs the connector beside it (used by the tests, the benchmarks and the demo)."""
