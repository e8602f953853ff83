#!/usr/bin/env python3
"""The reference node's membership hooks for the exec adapter (system.membership in exec-reference-membership.yaml).

    reference_membership.py add|remove ID MEMBERS CLIENT_ADDRS
    reference_membership.py list ID CLIENT_ADDRS

MEMBERS is `{members}` (the current members' ids, `0,1,2`), CLIENT_ADDRS `{client_addrs}` (`0=HOST:PORT,...` of every
node). `add` and `remove` ask the primary (the node that says so in the newest epoch and view) to make the members
of the next epoch MEMBERS plus or minus ID (`POST /reconfigure`, nodes/README.md "Reconfiguration"), following
`421` answers to a newer primary for at most 15 s. Exit codes, as faultline reads them: 0 done (the answer, with the
new epoch and members, on stdout), 1 refused and surely not applied (409 `not-applied`, or no primary took the
request), 2 unknown (a timeout, a lost connection, or no answer after a request went out). `list` prints node ID's
`{"epoch", "members"}` from its /status (exit 2 while it knows no epoch: a joiner not added yet).
Standard library only.
"""
import json
import sys
import time
import urllib.error
import urllib.request

CHANGE_TIMEOUT_S = 15.0
REQUEST_DEADLINE_MS = 5000
PROBE_TIMEOUT_S = 0.5
RETRY_DELAY_S = 0.2


def addrs_of(text):
    return {int(i): addr for i, addr in (pair.split("=", 1) for pair in text.split(",") if pair)}


def status(addr):
    with urllib.request.urlopen(f"http://{addr}/status", timeout=PROBE_TIMEOUT_S) as answer:
        return json.load(answer)


def primary(addrs):
    """The client address of the node that claims to be primary in the newest (epoch, view), or None."""
    best = None
    for addr in addrs.values():
        try:
            s = status(addr)
        except (OSError, ValueError):
            continue
        if s.get("role") == "primary" and s.get("status") == "normal":
            key = (s.get("epoch", 0), s.get("view", 0))
            if best is None or key > best[0]:
                best = (key, addr)
    return best and best[1]


def reconfigure(members, addrs):
    body = json.dumps({"members": sorted(members)}).encode()
    deadline = time.monotonic() + CHANGE_TIMEOUT_S
    sent, last = False, "no node is primary"
    while time.monotonic() < deadline:
        addr = primary(addrs)
        if addr is None:
            time.sleep(RETRY_DELAY_S)
            continue
        request = urllib.request.Request(
            f"http://{addr}/reconfigure", data=body, method="POST",
            headers={"Content-Type": "application/json", "X-Faultline-Deadline-Ms": str(REQUEST_DEADLINE_MS)})
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_DEADLINE_MS / 1000 + 1) as answer:
                print(answer.read().decode())
                return 0
        except urllib.error.HTTPError as error:
            sent = True
            text = error.read().decode(errors="replace")
            if error.code == 421:
                last = f"{addr} is no longer primary"
            elif '"not-applied"' in text:
                print(f"refused: HTTP {error.code}: {text}", file=sys.stderr)
                return 1
            else:
                print(f"unknown: HTTP {error.code}: {text}", file=sys.stderr)
                return 2
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError):
                print(f"unknown: {addr}: {error}", file=sys.stderr)
                return 2
            last = f"{addr} refused the connection"
        except OSError as error:
            print(f"unknown: {addr}: {error}", file=sys.stderr)
            return 2
        time.sleep(RETRY_DELAY_S)
    print(f"no primary took it within {CHANGE_TIMEOUT_S} s ({last})", file=sys.stderr)
    return 2 if sent else 1


def main(argv):
    if len(argv) == 4 and argv[1] == "list":
        node, addrs = int(argv[2]), addrs_of(argv[3])
        try:
            s = status(addrs[node])
        except (OSError, ValueError) as error:
            print(f"n{node + 1}: {error}", file=sys.stderr)
            return 2
        if not s.get("epoch"):
            print(f"n{node + 1} knows no epoch yet", file=sys.stderr)
            return 2
        print(json.dumps({"epoch": s["epoch"], "members": s["members"]}))
        return 0
    if len(argv) == 5 and argv[1] in ("add", "remove"):
        node, addrs = int(argv[2]), addrs_of(argv[4])
        members = {int(i) for i in argv[3].split(",") if i}
        members = members | {node} if argv[1] == "add" else members - {node}
        return reconfigure(members, addrs)
    print(__doc__, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
