#!/usr/bin/env python3
"""A faultline exec client for Redis with Sentinel (register and set workloads): plans/exec-redis-sentinel.yaml.

    redis_client.py CLIENT_ADDRS SENTINEL_ADDRS      (each `0=HOST:PORT,1=HOST:PORT,...`)

One process per logical client; one op per stdin line, one answer per stdout line (plans/exec/PROTOCOL.md). Every op,
reads too, goes to the primary that the Sentinel of the client's own node names (`SENTINEL get-master-addr-by-name`),
as a Sentinel-aware Redis client does: a client whose node is cut off with the old primary keeps using it.
- read: `MULTI; ROLE; GET k; EXEC`, so the value comes from a node that called itself master when it served it (a
  replica's read would be stale by design, not a finding); on a replica, or any error: `fail`.
- write: `SET k v`; an error reply (`READONLY` on a replica) did not apply it: `fail`.
- cas: a Lua script (`GET`, compare, `SET`), atomic on the server; 0 means the value differed: `fail cas-mismatch`.
- set workload (Jepsen's 2013 test): add is `SADD`, read is `MULTI; ROLE; SMEMBERS; EXEC`.
- No answer in time, or a connection lost after sending: `info`. Nothing reached the server: `fail`.
Standard library only: RESP spoken by hand (also imported by redis_status.py).
"""
import json
import socket
import sys
import time

MASTER_NAME = "mymaster"
SENTINEL_TIMEOUT_S = 0.3
CAS_SCRIPT = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 else return 0 end"
)


class NotSent(Exception):
    """Nothing reached the server: the op certainly did not happen."""


class Unknown(Exception):
    """Sent, but no (readable) answer: the op may or may not have happened."""


class ServerError(Exception):
    """The server answered with an error reply (`-READONLY ...`): it did not apply the command."""


def parse_addrs(text):
    """`0=HOST:PORT,1=HOST:PORT` -> ["HOST:PORT", ...] by id."""
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return [addr for _, addr in sorted((int(i), addr) for i, addr in pairs)]


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Connection:
    """One RESP connection; any transport error closes it for good (the caller drops it)."""

    def __init__(self, addr, timeout_s):
        host, port = addr.rsplit(":", 1)
        try:
            self.sock = socket.create_connection((host, int(port)), timeout=max(timeout_s, 0.001))
        except OSError as e:
            raise NotSent(f"connect to {addr}: {e}")
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        self.addr = addr

    def pipeline(self, commands, timeout_s):
        """Sends the commands in one write and returns their replies (error replies as ServerError values)."""
        self.sock.settimeout(max(timeout_s, 0.001))
        try:
            self.sock.sendall(b"".join(encode(c) for c in commands))
            return [self._reply() for _ in commands]
        except (OSError, EOFError, ValueError) as e:
            self.close()
            raise Unknown(f"{self.addr}: {'timed out' if isinstance(e, TimeoutError) else repr(e)}")

    def call(self, *args, timeout_s):
        reply = self.pipeline([args], timeout_s)[0]
        if isinstance(reply, ServerError):
            raise reply
        return reply

    def _reply(self):
        line = self.reader.readline()
        if not line.endswith(b"\r\n"):
            raise EOFError("connection closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ServerError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self.reader.read(size + 2)
            if len(data) != size + 2:
                raise EOFError("connection closed inside a bulk string")
            return data[:-2].decode()
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise ValueError(f"not RESP: {line[:80]!r}")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Pool:
    """One connection per address, reopened after a failure."""

    def __init__(self):
        self.connections = {}

    def call(self, addr, commands, timeout_s, idempotent=False):
        """The replies of `commands`. Redis closes every client connection when a node changes role: a command that
        is `idempotent` is sent once more on a fresh connection when a kept one turns out to be closed."""
        deadline = time.monotonic() + timeout_s
        kept = self.connections.pop(addr, None)
        conn = kept or Connection(addr, timeout_s)
        try:
            replies = conn.pipeline(commands, deadline - time.monotonic())
        except Unknown:
            if not (idempotent and kept) or time.monotonic() >= deadline:
                raise
            conn = Connection(addr, deadline - time.monotonic())
            replies = conn.pipeline(commands, deadline - time.monotonic())
        self.connections[addr] = conn
        return replies


def master_of(pool, sentinel_addr):
    """The primary `HOST:PORT` that this Sentinel names; NotSent when it cannot tell (no op was sent yet)."""
    try:
        command = ["SENTINEL", "get-master-addr-by-name", MASTER_NAME]
        reply = pool.call(sentinel_addr, [command], SENTINEL_TIMEOUT_S, idempotent=True)[0]
    except (Unknown, NotSent) as e:
        raise NotSent(f"sentinel {sentinel_addr}: {e}")
    if not isinstance(reply, list) or len(reply) != 2:
        raise NotSent(f"sentinel {sentinel_addr} names no primary: {reply!r}")
    return f"{reply[0]}:{reply[1]}"


def perform(pool, op, addr, deadline):
    f, key = op["f"], op["key"]
    remaining = deadline - time.monotonic()
    if f == "read":
        read = ["SMEMBERS", key] if key == "set" else ["GET", key]  # the set workload's one key is `set`
        replies = pool.call(addr, [["MULTI"], ["ROLE"], read, ["EXEC"]], remaining, idempotent=True)
        result = replies[-1]
        if not isinstance(result, list) or len(result) != 2 or any(isinstance(r, ServerError) for r in result):
            return {"type": "fail", "error": f"transaction failed: {replies!r}"}
        role, value = result
        if role[0] != "master":
            return {"type": "fail", "error": f"{addr} is a {role[0]}, not the primary"}
        return {"type": "ok", "value": sorted(value) if isinstance(value, list) else value}
    if f == "add":
        reply = pool.call(addr, [["SADD", key, op["value"]]], remaining)[0]
        if isinstance(reply, ServerError):
            return {"type": "fail", "error": str(reply)}
        return {"type": "ok"}
    if f == "write":
        reply = pool.call(addr, [["SET", key, op["value"]]], remaining)[0]
        if isinstance(reply, ServerError):
            return {"type": "fail", "error": str(reply)}
        return {"type": "ok"}
    if f == "cas":
        old, new = op["value"]
        reply = pool.call(addr, [["EVAL", CAS_SCRIPT, 1, key, old, new]], remaining)[0]
        if isinstance(reply, ServerError):
            return {"type": "fail", "error": str(reply)}
        if reply == 1:
            return {"type": "ok"}
        if reply == 0:
            return {"type": "fail", "error": "cas-mismatch"}
        return {"type": "info", "error": f"cas answered {reply!r}"}
    return {"type": "fail", "error": f"no {f!r} operation here"}


def main():
    client_addrs, sentinel_addrs = parse_addrs(sys.argv[1]), parse_addrs(sys.argv[2])
    node_of = {addr: f"n{i + 1}" for i, addr in enumerate(client_addrs)}
    pool = Pool()
    for line in sys.stdin:
        op = json.loads(line)
        deadline = time.monotonic() + op["timeout_ms"] / 1000.0 * 0.9
        home = int(op["node"][1:]) - 1
        try:
            addr = master_of(pool, sentinel_addrs[home])
            answer = perform(pool, op, addr, deadline)
            served = node_of.get(addr)
            if served and served != op["node"]:
                answer["node"] = served
        except NotSent as e:
            answer = {"type": "fail", "error": str(e)}
        except Unknown as e:
            answer = {"type": "info", "error": str(e)}
        answer["id"] = op["id"]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
