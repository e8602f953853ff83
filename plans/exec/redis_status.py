#!/usr/bin/env python3
"""faultline's status probe for one Redis + Sentinel node (plans/exec-redis-sentinel.yaml).

    redis_status.py REDIS_ADDR SENTINEL_ADDR            persistent: one probe per stdin line, one JSON line back
    redis_status.py REDIS_ADDR SENTINEL_ADDR --ready    exit 0 when both answer PING

A probe line is `{"probe": N, "timeout_ms": T}`; the answer, from `INFO replication` of the node's Redis and
`SENTINEL master mymaster` of its Sentinel, on the connections of the previous probe:
    {"role": "master"|"slave", "offset": master_repl_offset, "replid": master_replid,
     "epoch": the Sentinel's config-epoch, "believes": "HOST:PORT" of the primary its Sentinel names,
     "view": 2 x epoch, plus 1 when that primary is this node (a master its Sentinel no longer names is stale),
     "link": master_link_status (replicas), "replicas": connected_slaves (primaries)}
or `{"error": "why"}` when either does not answer in time (a node is both processes: paused or killed together).
Standard library only (RESP from redis_client.py, beside this file).
"""
import json
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the plan
from redis_client import MASTER_NAME, NotSent, Pool, ServerError, Unknown

DEFAULT_TIMEOUT_MS = 500


def info_fields(text):
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))


def status(pool, redis_addr, sentinel_addr, timeout_ms):
    """The status document; raises NotSent/Unknown/ServerError when a process does not answer properly."""
    deadline = time.monotonic() + timeout_ms / 1000.0 * 0.8
    info = pool.call(redis_addr, [["INFO", "replication"]], deadline - time.monotonic(), idempotent=True)[0]
    if isinstance(info, ServerError):
        raise info
    command = ["SENTINEL", "master", MASTER_NAME]
    master = pool.call(sentinel_addr, [command], deadline - time.monotonic(), idempotent=True)[0]
    if isinstance(master, ServerError):
        raise master
    fields, sentinel = info_fields(info), dict(zip(master[::2], master[1::2]))
    epoch, believes = int(sentinel["config-epoch"]), f"{sentinel['ip']}:{sentinel['port']}"
    document = {
        "role": fields["role"],
        "offset": int(fields["master_repl_offset"]),
        "replid": fields["master_replid"],
        "epoch": epoch,
        "believes": believes,
        # A master its own Sentinel no longer names was replaced in the Sentinel's current epoch: it ranks below the
        # master that epoch names (2 e + 1), and above every master of older epochs.
        "view": 2 * epoch + (1 if believes == redis_addr else 0),
    }
    if "master_link_status" in fields:
        document["link"] = fields["master_link_status"]
    if "connected_slaves" in fields:
        document["replicas"] = int(fields["connected_slaves"])
    return document


def ready(pool, redis_addr, sentinel_addr):
    try:
        return all(pool.call(addr, [["PING"]], 0.5)[0] == "PONG" for addr in (redis_addr, sentinel_addr))
    except (NotSent, Unknown):
        return False


def main():
    redis_addr, sentinel_addr = sys.argv[1], sys.argv[2]
    pool = Pool()
    if sys.argv[3:] == ["--ready"]:
        sys.exit(0 if ready(pool, redis_addr, sentinel_addr) else 1)
    for line in sys.stdin:
        timeout_ms = json.loads(line).get("timeout_ms", DEFAULT_TIMEOUT_MS)
        try:
            answer = status(pool, redis_addr, sentinel_addr, timeout_ms)
        except (NotSent, Unknown, ServerError) as e:
            answer = {"error": str(e)}
        except (KeyError, ValueError, TypeError) as e:  # an answer of another shape (e.g. still loading)
            answer = {"error": f"unexpected answer: {e!r}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
