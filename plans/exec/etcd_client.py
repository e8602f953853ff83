#!/usr/bin/env python3
"""A faultline exec client for etcd 3.4's v3 JSON gateway (register workload): plans/exec-etcd.yaml.

One process per logical client; one op per stdin line, one answer per stdout line (plans/exec/PROTOCOL.md).
Reads are linearizable ranges, writes are puts, compare-and-set is a txn. Standard library only.
"""
import base64
import http.client
import json
import socket
import sys
import time

CAS_MISMATCH = "cas-mismatch"
DEFINITE_FAILURE_CODES = {3, 11}  # gRPC InvalidArgument, OutOfRange: rejected before it was proposed

connections = {}


def b64(text):
    return base64.b64encode(text.encode()).decode()


class NotSent(Exception):
    pass


class Unknown(Exception):
    pass


def post(addr, path, body, deadline):
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise Unknown("deadline passed before sending")
    conn = connections.get(addr)
    if conn is None:
        host, port = addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=remaining)
        try:
            conn.connect()
        except OSError as e:
            raise NotSent(f"connection to {addr} failed: {e}")
        connections[addr] = conn
    conn.sock.settimeout(remaining)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = response.read()
    except (socket.timeout, TimeoutError):
        connections.pop(addr).close()
        raise Unknown("timed out")
    except (OSError, http.client.HTTPException) as e:
        connections.pop(addr).close()
        raise Unknown(f"connection lost after sending: {e!r}")
    try:
        return response.status, json.loads(payload)
    except ValueError:
        raise Unknown(f"HTTP {response.status}, unreadable body")


def call(op):
    f, key = op["f"], b64(op["key"])
    deadline = time.monotonic() + op["timeout_ms"] / 1000.0 * 0.9
    if f == "read":
        path, body = "/v3/kv/range", {"key": key}
    elif f == "write":
        path, body = "/v3/kv/put", {"key": key, "value": b64(op["value"])}
    elif f == "cas":
        old, new = op["value"]
        path = "/v3/kv/txn"
        body = {
            "compare": [{"key": key, "target": "VALUE", "result": "EQUAL", "value": b64(old)}],
            "success": [{"request_put": {"key": key, "value": b64(new)}}],
            "failure": [{"request_range": {"key": key}}],
        }
    else:
        return {"type": "fail", "error": f"etcd has no {f!r} here"}
    status, answer = post(op["addr"], path, body, deadline)
    if status != 200:
        code = answer.get("code", -1)
        why = f"HTTP {status}, gRPC code {code}: {answer.get('message') or answer.get('error')}"
        return {"type": "fail" if code in DEFINITE_FAILURE_CODES else "info", "error": why}
    if f == "read":
        kvs = answer.get("kvs") or []
        if not kvs:
            return {"type": "ok", "value": None}
        return {"type": "ok", "value": base64.b64decode(kvs[0].get("value", "")).decode()}
    if f == "cas" and answer.get("succeeded") is not True:  # proto3 leaves `succeeded: false` out
        return {"type": "fail", "error": CAS_MISMATCH}
    return {"type": "ok"}


def main():
    for line in sys.stdin:
        op = json.loads(line)
        try:
            answer = call(op)
        except NotSent as e:
            answer = {"type": "fail", "error": str(e)}
        except Unknown as e:
            answer = {"type": "info", "error": str(e)}
        answer["id"] = op["id"]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
