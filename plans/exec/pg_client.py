#!/usr/bin/env python3
"""A faultline exec client for PostgreSQL: the txn workload (list-append and rw-register micro-ops, so the long-fork
workload too) and Jepsen's bank workload: plans/exec-postgres.yaml, plans/exec-postgres-bank.yaml.

    pg_client.py

One process per logical client, one connection to its node (`addr` of each op), one op per stdin line and one answer
per stdout line (plans/exec/PROTOCOL.md). Each op is one PostgreSQL transaction at the isolation level of
`PG_ISOLATION` (`serializable`, the default, or `repeatable-read`; `read-committed` for experiments).
- `txn`: over two tables with a row per key, `lists (k text primary key, v bigint[])` and `regs (k text primary
  key, v bigint)`:
  - append: `INSERT ... ON CONFLICT (k) DO UPDATE SET v = lists.v || EXCLUDED.v` (one statement, whether or not the
    key exists yet);
  - w: `INSERT ... ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`;
  - r: the key's list, else its register (no row in either: `null`).
- bank (key `bank`): `accounts (id bigint primary key, balance bigint)`, opened by the first bank op of each client
  process with every account's opening balance (one `INSERT ... ON CONFLICT DO NOTHING` of every account, committed on
  its own: the openings are fixed, so whichever client opens them first, they are the same):
  - read: `SELECT id, balance FROM accounts` -> `{"0": 12, ...}`;
  - transfer: the `from` balance read; when it is less than the amount the transaction rolls back (`fail`:
    insufficient funds), else two `UPDATE`s, then COMMIT.

What each outcome means (a `fail` must be certain):
- The connection cannot be made (refused, the server starting up or shutting down): nothing was sent: `fail`.
- Any error before COMMIT was sent (a serialization failure, a deadlock, a statement timeout, a connection that broke
  mid-transaction): the transaction did not commit (PostgreSQL aborts a transaction whose session ends), `fail`.
- COMMIT answered with a serialization failure (40001) or a deadlock (40P01): aborted, `fail`. Any other error, or
  the connection lost while COMMIT was on its way or its answer was: it may have committed, `info`.
Driver: psycopg2 (Debian's `python3-psycopg2`). Its log (stderr) goes to the run's `clients.log`.
"""
import json
import os
import sys
import time

import psycopg2
import psycopg2.errors
import psycopg2.extensions

ISOLATION_LEVELS = {
    "serializable": psycopg2.extensions.ISOLATION_LEVEL_SERIALIZABLE,
    "repeatable-read": psycopg2.extensions.ISOLATION_LEVEL_REPEATABLE_READ,
    "read-committed": psycopg2.extensions.ISOLATION_LEVEL_READ_COMMITTED,
}
# SQLSTATEs that say the server rolled the transaction back: serialization_failure, deadlock_detected.
ABORTED = {"40001", "40P01"}
# A statement may run this share of the op's deadline, so the server cancels a long lock wait (an error: the
# transaction did not commit) before faultline gives up on the op (unknown).
STATEMENT_SHARE = 0.7
CONNECT_TIMEOUT_S = 1
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS lists (k text PRIMARY KEY, v bigint[] NOT NULL)",
    "CREATE TABLE IF NOT EXISTS regs (k text PRIMARY KEY, v bigint NOT NULL)",
    "CREATE TABLE IF NOT EXISTS accounts (id bigint PRIMARY KEY, balance bigint NOT NULL)",
]
APPEND = "INSERT INTO lists (k, v) VALUES (%s, ARRAY[%s]::bigint[]) ON CONFLICT (k) DO UPDATE SET v = lists.v || EXCLUDED.v"
WRITE = "INSERT INTO regs (k, v) VALUES (%s, %s) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
READ_LIST = "SELECT v FROM lists WHERE k = %s"
READ_REG = "SELECT v FROM regs WHERE k = %s"
# Every account in one statement: a reader never sees some accounts opened and others not.
OPEN_ACCOUNTS = (
    "INSERT INTO accounts (id, balance) SELECT * FROM unnest(%s::bigint[], %s::bigint[]) ON CONFLICT (id) DO NOTHING"
)
BALANCES = "SELECT id, balance FROM accounts ORDER BY id"
BALANCE = "SELECT balance FROM accounts WHERE id = %s"
MOVE = "UPDATE accounts SET balance = balance + %s WHERE id = %s"


class NotCommitted(Exception):
    """The transaction certainly did not commit."""


class Unknown(Exception):
    """It may have committed."""


def log(text):
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def describe(error):
    code = getattr(error, "pgcode", None)
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return f"{code} {text}" if code else text


class Session:
    """The connection of this client process (made again after it broke)."""

    def __init__(self, isolation):
        self.isolation = isolation
        self.conn = None
        self.addr = None
        self.schema_ready = False
        self.bank_open = False

    def connection(self, addr, timeout_ms):
        if self.conn is not None and (self.conn.closed or addr != self.addr):
            self.drop()
        if self.conn is None:
            host, port = addr.rsplit(":", 1)
            try:
                conn = psycopg2.connect(
                    host=host,
                    port=int(port),
                    user="postgres",
                    dbname="postgres",
                    connect_timeout=CONNECT_TIMEOUT_S,
                    application_name="faultline",
                )
            except psycopg2.Error as e:
                raise NotCommitted(f"connect to {addr}: {describe(e)}")
            self.conn, self.addr = conn, addr
        statement_ms = max(int(timeout_ms * STATEMENT_SHARE), 1)
        try:
            if not self.schema_ready:
                # Every client creates the table if it is missing; two at once may collide on the catalog's unique
                # indexes (the other one created it: fine).
                self.conn.autocommit = True
                with self.conn.cursor() as cur:
                    for statement in SCHEMA:
                        try:
                            cur.execute(statement)
                        except (
                            psycopg2.errors.UniqueViolation,
                            psycopg2.errors.DuplicateTable,
                            psycopg2.errors.DuplicateObject,
                        ):
                            pass
                self.schema_ready = True
            self.conn.autocommit = True
            with self.conn.cursor() as cur:
                cur.execute("SET statement_timeout = %s", (statement_ms,))
            self.conn.set_session(isolation_level=self.isolation, autocommit=False)
        except psycopg2.Error as e:
            self.drop()
            raise NotCommitted(f"setting up the session on {addr}: {describe(e)}")
        return self.conn

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg2.Error:
                pass
        self.conn = None

    def transaction(self, addr, timeout_ms, body):
        """Runs `body(cursor)` in one transaction and commits it: its result, or NotCommitted / Unknown."""
        conn = self.connection(addr, timeout_ms)
        try:
            with conn.cursor() as cur:
                result = body(cur)
        except psycopg2.Error as e:
            self.rollback()
            raise NotCommitted(describe(e))
        except (ValueError, NotCommitted):
            self.rollback()
            raise
        try:
            conn.commit()
        except psycopg2.Error as e:
            code = getattr(e, "pgcode", None)
            if code in ABORTED:
                self.rollback()
                raise NotCommitted(describe(e))
            self.drop()
            raise Unknown(f"at COMMIT: {describe(e)}")
        return result

    def txn(self, addr, micro_ops, timeout_ms):
        def run(cur):
            done = []
            for f, key, value in micro_ops:
                if f == "append":
                    cur.execute(APPEND, (key, value))
                    done.append([f, key, value])
                elif f == "w":
                    cur.execute(WRITE, (key, value))
                    done.append([f, key, value])
                elif f == "r":
                    cur.execute(READ_LIST, (key,))
                    row = cur.fetchone()
                    if row is not None:
                        done.append([f, key, [int(x) for x in row[0]]])
                        continue
                    cur.execute(READ_REG, (key,))
                    row = cur.fetchone()
                    done.append([f, key, None if row is None else int(row[0])])
                else:
                    raise ValueError(f"unknown micro-op {f!r}")
            return done

        return self.transaction(addr, timeout_ms, run)

    def open_bank(self, addr, bank, timeout_ms):
        """Opens every account with its opening balance, if nobody has: one committed statement."""
        if self.bank_open:
            return
        share, rest = divmod(bank["total"], bank["accounts"])
        conn = self.connection(addr, timeout_ms)
        try:
            conn.autocommit = True
            ids = list(range(bank["accounts"]))
            balances = [share + (rest if i == 0 else 0) for i in ids]
            with conn.cursor() as cur:
                cur.execute(OPEN_ACCOUNTS, (ids, balances))
            conn.set_session(isolation_level=self.isolation, autocommit=False)
        except psycopg2.Error as e:
            self.drop()
            raise NotCommitted(f"opening the bank on {addr}: {describe(e)}")
        self.bank_open = True

    def bank(self, addr, op, timeout_ms):
        bank = op["value"]
        self.open_bank(addr, bank, timeout_ms)
        if op["f"] == "read":
            def read(cur):
                cur.execute(BALANCES)
                return {str(i): int(balance) for i, balance in cur.fetchall()}

            return self.transaction(addr, timeout_ms, read)

        def transfer(cur):
            cur.execute(BALANCE, (bank["from"],))
            row = cur.fetchone()
            held = 0 if row is None else int(row[0])
            if held < bank["amount"]:
                raise NotCommitted(f"insufficient funds: account {bank['from']} holds {held} < {bank['amount']}")
            cur.execute(MOVE, (-bank["amount"], bank["from"]))
            cur.execute(MOVE, (bank["amount"], bank["to"]))
            return None

        return self.transaction(addr, timeout_ms, transfer)

    def rollback(self):
        try:
            if self.conn is not None and not self.conn.closed:
                self.conn.rollback()
        except psycopg2.Error:
            self.drop()


def answer(op, session):
    timeout_ms = op.get("timeout_ms", 1000)
    try:
        if op.get("key") == "bank" and op.get("f") in ("read", "transfer"):
            value = session.bank(op["addr"], op, timeout_ms)
        elif op.get("f") == "txn":
            value = session.txn(op["addr"], op["value"], timeout_ms)
        else:
            return {"type": "fail", "error": f"pg_client speaks txn and the bank, not {op.get('f')!r}"}
        return {"type": "ok", "value": value}
    except NotCommitted as e:
        return {"type": "fail", "error": str(e)[:200]}
    except Unknown as e:
        return {"type": "info", "error": str(e)[:200]}
    except ValueError as e:
        return {"type": "fail", "error": str(e)}


def main():
    name = os.environ.get("PG_ISOLATION", "serializable")
    if name not in ISOLATION_LEVELS:
        sys.exit(f"pg_client: PG_ISOLATION={name!r} is not one of {', '.join(ISOLATION_LEVELS)}")
    log(f"isolation level: {name}")
    session = Session(ISOLATION_LEVELS[name])
    for line in sys.stdin:
        op = json.loads(line)
        reply = answer(op, session)
        reply["id"] = op["id"]
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
