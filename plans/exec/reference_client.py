#!/usr/bin/env python3
"""A faultline exec client for faultline-node, the reference system: the example of plans/exec/PROTOCOL.md.

faultline starts one of these per logical client and writes one op per line on stdin; this answers each with one
line on stdout. Standard library only. Logs go to stderr (faultline keeps them in the run's clients.log).

The rule every client must follow: answer `fail` only when the op certainly did not take effect (the connection was
never made, the server said it did not apply it, a cas found another value), `info` when it may have (a timeout, a
connection lost after sending, an unexpected answer), and `ok` when it did.
"""
import http.client
import json
import socket
import sys
import time
import urllib.parse

REDIRECTS_MAX = 3
CAS_MISMATCH = "cas-mismatch"  # a cas that found another value: faultline's checker reads it as cas -> false


class Unknown(Exception):
    """The op may or may not have taken effect."""


class NotSent(Exception):
    """The op certainly did not take effect."""


connections = {}
# `ID=HOST:PORT,...` of every node's client address (the plan passes `{client_addrs}`), to say who served an op.
NODES = {}


def parse_nodes(text):
    """`0=127.0.0.1:25001,1=...` -> {"127.0.0.1:25001": "0", ...}."""
    return {addr: node for node, addr in (item.split("=", 1) for item in text.split(",") if "=" in item)}


def connection(addr, timeout_s):
    conn = connections.get(addr)
    if conn is None:
        host, port = addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout_s)
        try:
            conn.connect()
        except OSError as e:
            raise NotSent(f"connection to {addr} failed: {e}")
        connections[addr] = conn
    conn.timeout = timeout_s
    if conn.sock is not None:
        conn.sock.settimeout(timeout_s)
    return conn


def request(addr, method, path, body, op, deadline):
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise Unknown("deadline passed before sending")
    conn = connection(addr, remaining)
    headers = {
        "Content-Type": "application/json",
        "X-Faultline-Deadline-Ms": str(int(remaining * 1000)),
        "X-Client-Id": str(op["process"]),
        "X-Request-Number": str(op["id"]),
    }
    data = None if body is None else json.dumps(body)
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        payload = response.read()
    except (socket.timeout, TimeoutError):
        connections.pop(addr, None).close()
        raise Unknown("timed out")
    except (OSError, http.client.HTTPException) as e:
        connections.pop(addr, None).close()
        raise Unknown(f"connection lost after sending: {e!r}")
    try:
        return response.status, json.loads(payload) if payload else None
    except ValueError:
        return response.status, {"raw": payload.decode("utf-8", "replace")}


def opening(bank, i):
    """What account i opens with: an equal share of the total, account 0 with the remainder too."""
    share, rest = divmod(bank["total"], bank["accounts"])
    return share + (rest if i == 0 else 0)


def bank_call(op):
    """The bank workload (key `bank`) as one transaction on the node: a read opens (`init`, if nobody has) and reads
    every account `bank-<i>`, a transfer opens both accounts, debits one and credits the other; the node aborts an
    overdraft with nothing applied (409, not-applied: `fail`)."""
    bank = op["value"]
    accounts = range(bank["accounts"])
    if op["f"] == "read":
        micro_ops = [["init", f"bank-{i}", opening(bank, i)] for i in accounts]
        micro_ops += [["r", f"bank-{i}", None] for i in accounts]
    else:
        a, b, n = bank["from"], bank["to"], bank["amount"]
        micro_ops = [["init", f"bank-{a}", opening(bank, a)], ["init", f"bank-{b}", opening(bank, b)],
                     ["debit", f"bank-{a}", n], ["credit", f"bank-{b}", n]]
    answer = call(dict(op, f="txn", key=None, value=micro_ops))
    if answer["type"] != "ok":
        return answer
    if op["f"] == "read":
        reads = answer["value"][bank["accounts"]:]
        return {"type": "ok", "value": {str(i): read[2] for i, read in zip(accounts, reads)}}
    return {"type": "ok"}


def call(op):
    """Runs one op against the node the op names, following not-primary redirects; returns the answer dict."""
    if op["key"] == "bank":
        return bank_call(op)
    f, key, value = op["f"], urllib.parse.quote(op["key"] or "", safe=""), op["value"]
    deadline = time.monotonic() + op["timeout_ms"] / 1000.0 * 0.9
    is_log = isinstance(value, dict) or f == "append"
    if f == "txn":
        method, path, body = "POST", "/txn", value  # the micro-op list; the node runs it as one op
    elif f == "read" and is_log:
        method, path, body = "GET", f"/log/{key}?from={value['from']}&limit={value['limit']}", None
    elif f == "read":
        method, path, body = "GET", f"/kv/{key}", None
    elif f == "write":
        method, path, body = "PUT", f"/kv/{key}", {"value": value}
    elif f == "cas":
        method, path, body = "POST", f"/kv/{key}/cas", {"from": value[0], "to": value[1]}
    elif f == "append":
        method, path, body = "POST", f"/log/{key}", {"value": value}
    else:
        return {"type": "fail", "error": f"the reference node has no {f!r}"}
    addr = op["addr"]
    for _ in range(REDIRECTS_MAX + 1):
        status, answer = request(addr, method, path, body, op, deadline)
        answer = answer or {}
        if addr in NODES:
            op["served_by"] = f"n{int(NODES[addr]) + 1}"
        if status == 200:
            if f == "read" and is_log:
                entries = [[e["offset"], e["value"]] for e in answer.get("entries", [])]
                return {"type": "ok", "value": {"entries": entries, "end": answer.get("end")}}
            if f == "read":
                return {"type": "ok", "value": answer.get("value")}
            if f == "append":
                return {"type": "ok", "value": {"offset": answer.get("offset")}}
            if f == "txn":
                return {"type": "ok", "value": answer.get("value")}  # the micro-ops, every read filled
            return {"type": "ok"}
        if status == 409 and answer.get("error") == "precondition failed":
            return {"type": "fail", "error": CAS_MISMATCH}
        if status == 421 and answer.get("primary") and answer["primary"] != addr:
            addr = answer["primary"]  # a redirect proves the op was not applied
            continue
        if answer.get("outcome") == "not-applied":
            return {"type": "fail", "error": f"HTTP {status}: {answer}"}
        return {"type": "info", "error": f"HTTP {status}: {answer}"}
    return {"type": "fail", "error": "gave up following redirects before reaching a primary"}


def main():
    NODES.update(parse_nodes(sys.argv[1]) if len(sys.argv) > 1 else {})
    for line in sys.stdin:
        op = json.loads(line)
        try:
            answer = call(op)
        except NotSent as e:
            answer = {"type": "fail", "error": str(e)}
        except Unknown as e:
            answer = {"type": "info", "error": str(e)}
        answer["id"] = op["id"]
        if "served_by" in op:
            answer["node"] = op["served_by"]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
