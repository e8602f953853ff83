#!/usr/bin/env python3
"""ZooKeeper 3.8's membership hooks for the exec adapter (system.membership in plans/exec-zookeeper-membership.yaml),
through dynamic reconfiguration (`reconfigEnabled=true`) and kazoo.

    zk_membership.py init   --id ID --members MEMBERS --data-dir DIR --dynamic-file PATH ADDRS
    zk_membership.py add    --id ID --members MEMBERS ADDRS
    zk_membership.py remove --id ID --members MEMBERS ADDRS
    zk_membership.py list   --id ID ADDRS

ADDRS is `--quorum {addrs.quorum} --election {addrs.election} --client {addrs.client}` (`ID=HOST:PORT,...` of every
node; `list` and `remove` need only `--client`), MEMBERS is `{members}` (the current members' 0-based ids, `0,1,3`).
Server ids are faultline's 0-based ids, as in plans/exec-zookeeper.yaml.

- `init` (the plan's `prepare` and `wipe`) makes a node that joins the cluster of the moment: `myid`, written with an
  fsync, and the dynamic configuration file (`server.N=...` lines) of MEMBERS plus ID, as ZooKeeper's reconfiguration
  guide prescribes for a joiner: the servers of the last committed configuration, and itself as a participant. It
  cannot form a quorum alone; it finds the leader, syncs as a non-voting follower, and waits to be added. The
  `zoo.cfg.dynamic.<version>` files and `zoo.cfg.bak` a former incarnation left beside `zoo.cfg` are deleted: a
  replaced server is a new one.
- `add` and `remove` ask the cluster (through any member) for `reconfig -add server.ID=...` / `reconfig -remove ID`,
  conditional on the configuration version read just before (`from_config`), so a retry never applies a change twice
  and never applies it on top of a change it did not see. Retried for CHANGE_TIMEOUT_S while ZooKeeper refuses it for
  now (`NewConfigNoQuorum`: the joiner is not synced with the leader yet, or a partition keeps the new quorum apart;
  `ReconfigInProcess`; a version that moved). A request whose answer was lost (the connection dropped: a leader that
  removes itself hands over to a new one, and every follower drops its clients) is settled by reading the
  configuration after a `sync`: the change is there (done) or a retry, conditional on the old version, decides.
- `list` prints node ID's `/zookeeper/config`: `{"members": [participants], "epoch": version}`. The `version=` line is
  the zxid (hex) of the reconfiguration that made the configuration: the configuration's epoch. Read without a
  `sync`: faultline asks every member and takes the newest version.

Exit codes, as faultline reads them: 0 done (the new members and version on stdout), 1 refused and surely not applied
(every attempt was refused, or reconfiguration is disabled or not permitted), 2 unknown (a request's answer was lost
and the configuration could not be read after it), and `list` exits 2 when the node does not answer.
Reconfiguration needs the super user: the plan sets ZooKeeper's superDigest from SUPER_USER and SUPER_PASSWORD.
"""
import argparse
import json
import logging
import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (BadArgumentsError, BadVersionError, NewConfigNoQuorumError, NoAuthError,
                              ReconfigDisabledError, ReconfigInProcessError, UnimplementedError)
from kazoo.retry import KazooRetry

CONFIG_ZNODE = "/zookeeper/config"
SUPER_USER = "super"
SUPER_PASSWORD = "faultline"
# Under faultline's 30 s bound on one `add` or `remove`: an answer beats a killed hook.
CHANGE_TIMEOUT_S = 22.0
LIST_TIMEOUT_S = 3.0
SESSION_TIMEOUT_S = 4.0          # the server clamps it to [2, 20] x tickTime
REQUEST_TIMEOUT_S = 6.0          # one reconfig, sync or get handed to kazoo
RETRY_DELAY_S = 0.3
EXIT_DONE, EXIT_REFUSED, EXIT_UNKNOWN = 0, 1, 2

log = logging.getLogger("zk_membership")


class Refused(Exception):
    """ZooKeeper will not apply this change at all: retrying cannot help."""


def addr_map(text):
    """`0=HOST:PORT,1=HOST:PORT` as {0: "HOST:PORT", ...}."""
    return {int(i): addr for i, addr in (pair.split("=", 1) for pair in text.split(",") if pair)}


def ids(text):
    return sorted({int(i) for i in text.split(",") if i})


def server_line(node, args):
    """`server.N=HOST:QUORUM:ELECTION:participant;HOST:CLIENT` of node `node`."""
    quorum, election, client = (addr_map(text)[node] for text in (args.quorum, args.election, args.client))
    election_port = election.rsplit(":", 1)[1]
    return f"server.{node}={quorum}:{election_port}:participant;{client}"


def parse_config(data):
    """`/zookeeper/config`'s text as (participant ids, version)."""
    members, version = [], None
    for line in data.decode().splitlines():
        key, _, value = line.strip().partition("=")
        if key.startswith("server.") and value.split(";", 1)[0].split(":")[-1] != "observer":
            members.append(int(key[len("server."):]))
        elif key == "version":
            version = int(value, 16)
    if version is None:
        raise ValueError(f"{CONFIG_ZNODE} has no version= line: {data!r}")
    return sorted(members), version


def write_durably(path, text):
    temporary = path + ".tmp"
    with open(temporary, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def init(args):
    folder = os.path.dirname(args.dynamic_file)
    stale = os.path.basename(args.dynamic_file) + "."
    for name in os.listdir(folder):
        if name.startswith(stale) or name == "zoo.cfg.bak":
            os.remove(os.path.join(folder, name))
    servers = sorted(set(ids(args.members)) | {args.id})
    write_durably(args.dynamic_file, "".join(server_line(n, args) + "\n" for n in servers))
    os.makedirs(args.data_dir, exist_ok=True)
    write_durably(os.path.join(args.data_dir, "myid"), f"{args.id}\n")
    print(f"server.{args.id}: joins {servers}, {args.dynamic_file}")
    return EXIT_DONE


def connect(hosts, deadline):
    """A started kazoo client with super-user rights, or None when no server took a session before `deadline`."""
    retry = KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5, ignore_expire=True)
    zk = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S, connection_retry=retry, command_retry=None,
                     auth_data=[("digest", f"{SUPER_USER}:{SUPER_PASSWORD}")])
    try:
        zk.start(timeout=max(0.1, deadline - time.monotonic()))
    except Exception as error:  # kazoo's timeout, or a handshake that failed: no session, nothing sent
        log.warning("no session with %s: %s", hosts, error)
        zk.stop()
        zk.close()
        return None
    return zk


def read_config(zk, synced):
    if synced:
        zk.sync_async(CONFIG_ZNODE).get(timeout=REQUEST_TIMEOUT_S)
    data, _stat = zk.get_async(CONFIG_ZNODE).get(timeout=REQUEST_TIMEOUT_S)
    return parse_config(data)


def change(args, want):
    """Asks for the change until ZooKeeper applied it, refused it for good, or CHANGE_TIMEOUT_S passed."""
    members = addr_map(args.client)
    hosts = ",".join(members[m] for m in ids(args.members) if m in members)
    joining = server_line(args.id, args) if want == "add" else None
    leaving = str(args.id) if want == "remove" else None
    done = (lambda now: args.id in now) if want == "add" else (lambda now: args.id not in now)
    deadline = time.monotonic() + CHANGE_TIMEOUT_S
    lost, last = False, "no attempt"
    while time.monotonic() < deadline:
        zk = connect(hosts, deadline)
        if zk is None:
            last = f"no session with any of {hosts}"
            time.sleep(RETRY_DELAY_S)
            continue
        sent = False
        try:
            now, version = read_config(zk, synced=True)
            if done(now):
                print(json.dumps({"members": now, "epoch": version}))
                return EXIT_DONE
            sent = True
            request = zk.reconfig_async(joining, leaving, None, version)
            data, _stat = request.get(timeout=max(0.1, min(REQUEST_TIMEOUT_S, deadline - time.monotonic())))
            now, version = parse_config(data)
            print(json.dumps({"members": now, "epoch": version}))
            return EXIT_DONE
        except (NewConfigNoQuorumError, ReconfigInProcessError, BadVersionError) as error:
            last = f"{type(error).__name__}: not applied, retrying"
        except (ReconfigDisabledError, UnimplementedError, NoAuthError, BadArgumentsError) as error:
            print(f"refused: {type(error).__name__} {error}", file=sys.stderr)
            return EXIT_UNKNOWN if lost else EXIT_REFUSED  # an earlier request whose answer was lost may still apply
        except Exception as error:  # the connection lost, a timeout: the next round reads what became of it
            lost, last = lost or sent, f"{type(error).__name__} {error}".strip()
        finally:
            zk.stop()
            zk.close()
        log.warning("%s of server.%d: %s", want, args.id, last)
        time.sleep(RETRY_DELAY_S)
    print(f"{want} of server.{args.id}: no verdict within {CHANGE_TIMEOUT_S} s ({last})", file=sys.stderr)
    return EXIT_UNKNOWN if lost else EXIT_REFUSED


def list_members(args):
    addr = addr_map(args.client)[args.id]
    zk = connect(addr, time.monotonic() + LIST_TIMEOUT_S)
    if zk is None:
        print(f"server.{args.id} at {addr}: no session", file=sys.stderr)
        return EXIT_UNKNOWN
    try:
        now, version = read_config(zk, synced=False)
    except Exception as error:
        print(f"server.{args.id} at {addr}: {type(error).__name__} {error}", file=sys.stderr)
        return EXIT_UNKNOWN
    finally:
        zk.stop()
        zk.close()
    print(json.dumps({"members": now, "epoch": version}))
    return EXIT_DONE


def arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["init", "add", "remove", "list"])
    parser.add_argument("--id", type=int, required=True)
    parser.add_argument("--members", default="")
    parser.add_argument("--quorum", default="")
    parser.add_argument("--election", default="")
    parser.add_argument("--client", required=True)
    parser.add_argument("--data-dir")
    parser.add_argument("--dynamic-file")
    args = parser.parse_args(argv)
    if args.action in ("init", "add") and not (args.quorum and args.election):
        parser.error(f"{args.action} needs --quorum and --election: a server line names both ports")
    if args.action == "init" and not (args.data_dir and args.dynamic_file):
        parser.error("init needs --data-dir and --dynamic-file")
    return args


def main(argv):
    logging.basicConfig(stream=sys.stderr, level=logging.ERROR, format="%(asctime)s %(name)s %(message)s")
    log.setLevel(logging.WARNING)
    args = arguments(argv)
    if args.action == "init":
        return init(args)
    if args.action == "list":
        return list_members(args)
    return change(args, args.action)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
