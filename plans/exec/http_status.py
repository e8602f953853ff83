#!/usr/bin/env python3
"""A persistent status process for faultline (`system.status: {command: [...], persistent: true}`).

faultline starts one per node and writes one line per probe, `{"probe": N, "timeout_ms": T}`; this answers one line:
the JSON document at the URL given as the first argument, or `{"error": "why"}` when the node did not answer. It is
the smallest example of the protocol (the status of a system with an HTTP endpoint needs no process at all:
`status: {http: URL}`); a real one would run `redis-cli INFO`, send ZooKeeper's `srvr`, or query a database, and
print what it learned as JSON. Logs go to stderr (the node's `status.log`). Standard library only.
"""
import json
import sys
import urllib.request

url = sys.argv[1]

for line in sys.stdin:
    probe = json.loads(line)
    # Answer inside faultline's deadline, or it kills this process and starts another.
    timeout = max(probe.get("timeout_ms", 250) / 1000 - 0.05, 0.05)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            answer = json.loads(response.read())
    except Exception as e:  # down, paused, refused, timed out: the node did not answer
        answer = {"error": repr(e)}
    print(json.dumps(answer), flush=True)
