"""The source of the sandboxed python tool worker (`pytools.py` runs it): the `benchpack_tools`
module a pack module imports (`API`) and the worker program (`WORKER`). Kept apart so the
runner's side stays readable; see `pytools.py` for the protocol."""

API = r'''
"""benchpack_tools: what a pack's python tools import (`State`, `ToolError`)."""
import copy as _copy
import json as _json


class ToolError(Exception):
    """Raise it to tell the agent the call failed (and why): the agent sees a tool error."""


def _jkey(key):
    return _json.dumps(key, sort_keys=True)


_NEW = object()


class State:
    """The service's tables (values are JSON). Returned rows are copies: change one, then
    `put` it. A call that raises changes nothing."""

    def __init__(self, tables, info):
        self._tables = {t: {_jkey(r[info[t]["key"]]): r for r in rows if info[t]["key"] in r}
                        for t, rows in tables.items()}
        self._info = info
        self._journal = []
        self._undo = []
        # the episode's journal: each changed key's row before its first change (`_NEW`: it
        # was not there), so that a warm worker is reset by undoing it (`_reset_episode`)
        self._touched = {}
        self._deleted = False
        self._counters = {t: i["counter"] for t, i in info.items()}

    def _reset_episode(self):
        """Back to the tables this State was made from, by undoing the episode's changes:
        False when a row was deleted (putting it back would move it to the end of its table,
        and the order of rows is what `rows`/`find` return), then the caller reloads."""
        if self._deleted:
            return False
        for (table, k), old in self._touched.items():
            if old is _NEW:
                self._tables[table].pop(k, None)
            else:
                self._tables[table][k] = old  # an existing key keeps its place
        for table, counter in self._counters.items():
            self._info[table]["counter"] = counter
        self._touched, self._journal, self._undo = {}, [], []
        return True

    def _table(self, table):
        if table not in self._tables:
            raise ToolError(f"there is no table `{table}`; tables: "
                            + ", ".join(sorted(self._tables)))
        return self._tables[table]

    def get(self, table, key):
        """The row with this key; ToolError if there is none."""
        row = self._table(table).get(_jkey(key))
        if row is None:
            raise ToolError(f"no row of `{table}` with {self._info[table]['key']} {key!r}")
        return _copy.deepcopy(row)

    def find(self, table, **equals):
        """Rows whose fields equal all of `equals`."""
        return [_copy.deepcopy(r) for r in self._table(table).values()
                if all(f in r and r[f] == v for f, v in equals.items())]

    def rows(self, table):
        return [_copy.deepcopy(r) for r in self._table(table).values()]

    def put(self, table, row):
        """Insert `row`, or replace the row with the same key (a row without its key gets
        `next_id(table)`)."""
        rows = self._table(table)
        if not isinstance(row, dict):
            raise TypeError(f"State.put: a row must be a dict, got {type(row).__name__}")
        key_field = self._info[table]["key"]
        row = _json.loads(_json.dumps(row))  # a copy, and proof that it is JSON
        if row.get(key_field) is None:
            row[key_field] = self.next_id(table)
        k = _jkey(row[key_field])
        self._undo.append((table, k, rows.get(k), self._info[table]["counter"]))
        self._touched.setdefault((table, k), rows.get(k, _NEW))
        rows[k] = row
        n = self._number(table, row[key_field])
        if n is not None:
            self._info[table]["counter"] = max(self._info[table]["counter"], n)
        self._journal.append({"op": "put", "table": table, "row": _copy.deepcopy(row)})
        return _copy.deepcopy(row)

    def delete(self, table, key):
        """Remove the row with this key; ToolError if there is none."""
        rows = self._table(table)
        k = _jkey(key)
        if k not in rows:
            raise ToolError(f"no row of `{table}` with {self._info[table]['key']} {key!r}")
        self._undo.append((table, k, rows[k], self._info[table]["counter"]))
        self._deleted = True
        del rows[k]
        self._journal.append({"op": "delete", "table": table, "key": key})

    def _number(self, table, key):
        info = self._info[table]
        if info["int_keys"]:
            return key if isinstance(key, int) and not isinstance(key, bool) else None
        p = info["prefix"]
        if isinstance(key, str) and key.startswith(p) and key[len(p):].isdigit():
            return int(key[len(p):])
        return None

    def next_id(self, table):
        """The next free generated key (prefix and padding as the table's existing keys)."""
        rows = self._table(table)
        info = self._info[table]
        n = info["counter"]
        while True:
            n += 1
            key = n if info["int_keys"] else f"{info['prefix']}{str(n).zfill(info['width'])}"
            if _jkey(key) not in rows:
                return key

    def _begin(self):
        self._journal, self._undo = [], []

    def _reload(self, tables, info):
        """Replace these tables with the runner's (another toolset changed them since this
        replica last saw them); the episode's undo journal no longer holds, so the next
        episode reloads from the start instead of undoing."""
        for t, rows in tables.items():
            key = info[t]["key"]
            self._tables[t] = {_jkey(r[key]): r for r in rows if key in r}
            self._info[t] = info[t]
        self._deleted = True

    def _rollback(self):
        # dict order is row order: restore a replaced row in place, a deleted one at the end
        # (the runner's copy never saw the call, so the next load resets the order anyway)
        for table, k, old, counter in reversed(self._undo):
            if old is None:
                self._tables[table].pop(k, None)
            else:
                self._tables[table][k] = old
            self._info[table]["counter"] = counter
        self._journal, self._undo = [], []
'''

WORKER = r'''
import asyncio, importlib.util, inspect, json, os, shutil, sys, traceback
proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
os.dup2(2, 1)  # the pack's prints go to stderr, never into the protocol
sys.path.insert(0, "/sandbox/api")
import benchpack_tools


def send(obj):
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"error": f"the tool returned a value that is not JSON: {exc}",
                           "kind": "crash"})
    proto_out.write(text + "\n")
    proto_out.flush()


def failed(state):
    """After a call raised: nothing changed (atomic), or the changes made so far stay."""
    if ATOMIC:
        state._rollback()
        return {}
    try:
        json.dumps(state._journal, allow_nan=False)
    except (TypeError, ValueError):  # a row that is not JSON: as an atomic call
        state._rollback()
        return {}
    return {"changes": state._journal}


def where(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == MODULE]
    return f" (line {frames[-1].lineno} of {SHOWN})" if frames else ""


INIT = open("/sandbox/init.json", encoding="utf-8").read()
init = json.loads(INIT)
MODULE, SHOWN = "/sandbox/pack/" + init["file"], init["shown"]
ATOMIC, PLAIN = init.get("atomic", True), init.get("plain_errors", False)
HOOK = init.get("after_call")
ENVIRON = dict(os.environ)


CODE = []


def load():
    """The pack module, executed afresh in a new module (compiled once per process)."""
    spec = importlib.util.spec_from_file_location(init["module"], MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[init["module"]] = module
    if not CODE:
        with open(MODULE, "rb") as f:
            CODE.append(compile(f.read(), MODULE, "exec", dont_inherit=True))
    exec(CODE[0], module.__dict__)
    return module


def empty(directory):
    for entry in os.scandir(directory):
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


try:
    mod = load()
except BaseException as exc:
    send({"fatal": f"{type(exc).__name__}: {exc}{where(exc)}"})
    sys.exit(0)
state = benchpack_tools.State(init["tables"], init["info"])
send({"ready": True})
for line in proto_in:
    req = json.loads(line)
    if req.get("reset"):  # the next episode: as if started afresh (pytool_pool.py)
        empty("/work")
        empty("/tmp")
        os.chdir("/work")
        os.environ.clear()
        os.environ.update(ENVIRON)
        try:
            mod = load()
        except BaseException as exc:
            send({"fatal": f"{type(exc).__name__}: {exc}{where(exc)}"})
            sys.exit(0)
        if not state._reset_episode():
            fresh = json.loads(INIT)
            state = benchpack_tools.State(fresh["tables"], fresh["info"])
        send({"ready": True})
        continue
    if req.get("reload"):
        state._reload(req["reload"]["tables"], req["reload"]["info"])
    fn = (lambda: None) if req.get("hook_only") else getattr(mod, req["function"], None)
    if not callable(fn):
        send({"error": f"the module has no function `{req['function']}`", "kind": "crash"})
        continue
    kwargs = dict(req["args"])
    if req.get("state"):
        kwargs[req["state"]] = state
    state._begin()
    try:
        out = fn(**kwargs)
        if inspect.iscoroutine(out):
            out = asyncio.run(out)
        if HOOK:  # the toolset's after_call, part of the same call (its changes are the call's)
            getattr(mod, HOOK)(state)
        answer = {"result": out, "changes": state._journal}
        json.dumps(answer, allow_nan=False)
    except benchpack_tools.ToolError as exc:
        answer = {"error": str(exc) if PLAIN else str(exc) or type(exc).__name__,
                  "kind": "tool"}
        answer.update(failed(state))
    except BaseException as exc:  # the pack's bug (or sys.exit): the call fails, we go on
        answer = {"error": str(exc) if PLAIN else f"{type(exc).__name__}: {exc}{where(exc)}",
                  "kind": "crash"}
        answer.update(failed(state))
    send(answer)
'''
