#!/usr/bin/env python3
"""faultline's status probe for one ZooKeeper 3.8 server, from its `srvr` four-letter word (plans/exec-zookeeper.yaml).

    zk_status.py HOST PORT            persistent: one probe per stdin line ({"probe": N, "timeout_ms": T}), one JSON
                                      line back per probe
    zk_status.py HOST PORT --once     one probe; the JSON object on stdout, exit 1 when the server did not answer

The answer: {"mode": "leader"|"follower"|..., "zxid": N, "epoch": N >> 32, "counter": N & 0xffffffff,
"node_count": N}. `zxid` is the last transaction the server applied (its data tree's); its high 32 bits are the epoch
of the leader that proposed it, which is ZooKeeper's view. A server that is electing a leader, or cut off from its
quorum, answers "This ZooKeeper instance is not currently serving requests": that is {"error": ...}, as is a refused
or timed-out connection. The server must list `srvr` in `4lw.commands.whitelist`. Standard library only.
"""
import time

# faultline sends the first probe as it starts this process: its deadline runs from here.
STARTED_S = time.monotonic()

import json  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402

NOT_SERVING = "not currently serving requests"
ANSWER_BYTES_MAX = 64 * 1024


class NoAnswer(Exception):
    pass


def srvr(host, port, timeout_s):
    """The server's `srvr` answer, as text; NoAnswer when it gave none within timeout_s."""
    deadline = time.monotonic() + timeout_s
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(b"srvr")
            chunks, size = [], 0
            while size < ANSWER_BYTES_MAX:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise NoAnswer(f"no complete answer to srvr within {timeout_s:.2f} s")
                sock.settimeout(remaining)
                chunk = sock.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except (OSError, socket.timeout) as e:
        raise NoAnswer(f"srvr to {host}:{port}: {e}")
    return b"".join(chunks).decode(errors="replace")


def parse(text):
    """srvr's `Key: value` lines into the status object; NoAnswer for a server that is not serving."""
    if NOT_SERVING in text:
        raise NoAnswer(text.strip())
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if "Mode" not in fields or "Zxid" not in fields:
        raise NoAnswer(f"srvr answered without Mode and Zxid: {text.strip()[:200]!r}")
    zxid = int(fields["Zxid"], 16)
    status = {"mode": fields["Mode"], "zxid": zxid, "epoch": zxid >> 32, "counter": zxid & 0xFFFFFFFF}
    if fields.get("Node count", "").isdigit():
        status["node_count"] = int(fields["Node count"])
    return status


def probe(host, port, timeout_s):
    return parse(srvr(host, port, timeout_s))


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    if "--once" in sys.argv[3:]:
        try:
            print(json.dumps(probe(host, port, 1.0)))
        except NoAnswer as e:
            print(str(e), file=sys.stderr)
            sys.exit(1)
        return
    first = True
    for line in sys.stdin:
        request = json.loads(line)
        now_s = time.monotonic()
        sent_s = STARTED_S if first else now_s
        first = False
        # Answer well inside faultline's deadline: a late line gets this process replaced.
        timeout_s = max(0.02, request.get("timeout_ms", 1000) / 1000.0 * 0.7 - (now_s - sent_s))
        try:
            answer = probe(host, port, timeout_s)
        except NoAnswer as e:
            answer = {"error": str(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
