#!/usr/bin/env python3
"""A faultline exec client for ZooKeeper 3.8 (register workload) through kazoo: plans/exec-zookeeper.yaml.

One process per logical client; one op per stdin line, one answer per stdout line (plans/exec/PROTOCOL.md). Each
process keeps one ZooKeeper session with the one server its op names (`addr`), never another: ZooKeeper has no
redirects, and a client bound to its server is what makes a stale follower visible. A register `k` is the znode `/k`.

- read: `sync(/k)` then `get(/k)`; a missing znode reads null. ZooKeeper serves reads from the server's local copy,
  which may lag the leader: only a `sync` first (the server catches up with the leader) makes a read linearizable.
  `ZK_CLIENT_SYNC=off` in the environment (faultline's own environment reaches its clients) leaves the sync out: a
  deliberately broken client, for the negative test.
- write: `set(/k, v)`, or `create(/k, v)` when the znode does not exist yet (a create that finds it made meanwhile
  goes back to set; each attempt is rejected by the server before it applies, so at most one of them takes effect).
- cas [from, to]: `sync` (unless off), `get(/k)` for the data and its version; data other than `from` (or no znode)
  is `fail` `cas-mismatch`; else `set(/k, to, version)`, and BadVersion (another write came in between) is `fail`
  `cas-mismatch` too. Values are unique, so a znode at a newer version never holds `from` again.

Outcomes: a request never sent (no session with the server within the deadline) is `fail`; a server's own rejection
(BadVersion, NoNode, NodeExists) is certain; anything after a write was handed to kazoo without an answer
(connection loss, session expiry, the deadline) is `info`: kazoo queues a request while it reconnects and sends it
later, so it may still apply; faultline then kills this process, which is what stops kazoo from sending it. kazoo
never retries a command by itself (no `command_retry` and no `retry()` here). Read errors are `fail`.
"""
import time

# faultline sends the first op as it starts this process: its deadline runs from here, not from after the imports.
STARTED_S = time.monotonic()

import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

CAS_MISMATCH = "cas-mismatch"
SESSION_TIMEOUT_S = 4.0           # the server clamps it to [2, 20] x tickTime (tickTime 250 ms in the plan)
DEADLINE_SHARE = 0.85             # of the op's timeout_ms: answer before faultline gives up on this process
WRITE_ATTEMPTS_MAX = 4            # set -> create -> set ...: each attempt ends in a definite rejection or the answer
SYNC = os.environ.get("ZK_CLIENT_SYNC", "on").lower() not in ("off", "0", "false", "no")

log = logging.getLogger("zk_client")


class NotSent(Exception):
    """The request was never handed to the server: certainly no effect."""


class Unknown(Exception):
    """The request may have been applied."""


class Session:
    """A kazoo session with one server that reconnects on its own; `connected` is set while it is usable."""

    def __init__(self, addr):
        self.addr = addr
        self.connected = threading.Event()
        # Reconnect forever, quickly: kazoo's default backs off for a long time after a server restart.
        retry = KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5, ignore_expire=True)
        self.zk = KazooClient(hosts=addr, timeout=SESSION_TIMEOUT_S, connection_retry=retry, command_retry=None,
                              randomize_hosts=False)
        self.zk.add_listener(self.on_state)
        self.zk.start_async()

    def on_state(self, state):
        if state == KazooState.CONNECTED:
            self.connected.set()
        else:
            self.connected.clear()
        log.info("session with %s: %s", self.addr, state)

    def await_connected(self, deadline):
        if not self.connected.wait(timeout=max(0.0, deadline - time.monotonic())):
            raise NotSent(f"no ZooKeeper session with {self.addr} within the deadline")


def answer_by(async_result, deadline, what):
    """The result of one request handed to kazoo, or the server's own error; Unknown when it did not come."""
    remaining = deadline - time.monotonic()
    try:
        return async_result.get(timeout=max(0.001, remaining))
    except (BadVersionError, NoNodeError, NodeExistsError):
        raise
    except Exception as e:  # the connection lost, the session expired, the deadline passed: no verdict
        raise Unknown(f"{what}: {type(e).__name__} {e}".strip())


def read(session, path, deadline):
    session.await_connected(deadline)
    try:
        if SYNC:
            answer_by(session.zk.sync_async(path), deadline, "sync")
        data, _stat = answer_by(session.zk.get_async(path), deadline, "get")
    except NoNodeError:
        return None
    except Unknown as e:  # a read has no effect: it certainly failed
        raise NotSent(str(e))
    return data.decode()


def write(session, path, value, deadline):
    data = value.encode()
    for _ in range(WRITE_ATTEMPTS_MAX):
        session.await_connected(deadline)
        try:
            answer_by(session.zk.set_async(path, data), deadline, "set")
            return
        except NoNodeError:
            pass
        session.await_connected(deadline)
        try:
            answer_by(session.zk.create_async(path, data), deadline, "create")
            return
        except NodeExistsError:
            pass
    raise NotSent(f"{path} kept being created and deleted under the write ({WRITE_ATTEMPTS_MAX} attempts)")


def cas(session, path, old, new, deadline):
    """Unknown only once the set was handed over; a mismatch before it is a definite failure."""
    session.await_connected(deadline)
    try:
        if SYNC:
            answer_by(session.zk.sync_async(path), deadline, "sync")
        data, stat = answer_by(session.zk.get_async(path), deadline, "get")
    except NoNodeError:
        return False
    except Unknown as e:  # nothing was written yet
        raise NotSent(f"cas read: {e}")
    if data.decode() != old:
        return False
    session.await_connected(deadline)
    try:
        answer_by(session.zk.set_async(path, new.encode(), version=stat.version), deadline, "set")
    except BadVersionError:
        return False
    return True


sessions = {}


first_op = True


def call(op):
    global first_op
    sent_s = STARTED_S if first_op else time.monotonic()
    first_op = False
    deadline = sent_s + op["timeout_ms"] / 1000.0 * DEADLINE_SHARE
    addr, f, path = op["addr"], op["f"], "/" + op["key"]
    session = sessions.get(addr)
    if session is None:
        session = sessions[addr] = Session(addr)
    if f == "read":
        return {"type": "ok", "value": read(session, path, deadline)}
    if f == "write":
        write(session, path, op["value"], deadline)
        return {"type": "ok"}
    if f == "cas":
        old, new = op["value"]
        if cas(session, path, old, new, deadline):
            return {"type": "ok"}
        return {"type": "fail", "error": CAS_MISMATCH}
    return {"type": "fail", "error": f"this client has no {f!r}"}


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log.setLevel(logging.INFO)
    log.info("sync before reads: %s", "on" if SYNC else "OFF (stale reads expected)")
    for line in sys.stdin:
        op = json.loads(line)
        try:
            answer = call(op)
        except NotSent as e:
            answer = {"type": "fail", "error": str(e)}
        except Unknown as e:
            answer = {"type": "info", "error": str(e)}
        except Exception as e:  # anything else: the outcome is unknown
            answer = {"type": "info", "error": f"{type(e).__name__}: {e}"}
        answer["id"] = op["id"]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
