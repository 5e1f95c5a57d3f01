"""HTTP services and HTTP tools (issue 12, section 2): the shapes the runtime consumes.

A pack can declare a service that is a *process* (its own HTTP server, pack code, run in the
bubblewrap sandbox with no network) instead of tables, and tools whose implementation is one HTTP
request to such a service. The same models serve as the user-written shape and the compiled
one: the compiler renders `{{ }}` in `env` and puts the files under `cwd` into the plan
(`plan.PlanProcess`), which the runtime writes into the run's directory and mounts at `/pack`.

```yaml
services:
  - name: crm
    process:
      command: [python, services/crm.py]
      port: auto
      health: {path: /health, timeout_s: 20}
      reset: {method: POST, path: /reset}
      env: {DATA_DIR: fixtures/crm}
tools:
  - name: crm__get_customer
    impl: {kind: http, service: crm, method: GET, path: "/customers/{customer_id}"}
```
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Spec

HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
HTTP_PATH_PATTERN = r"^/[^\s#]*$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class HttpEndpoint(Spec):
    """One request the runner makes to the service itself (not a tool the agent sees)."""

    method: HttpMethod = "POST"
    """HTTP method."""
    path: str = Field(pattern=HTTP_PATH_PATTERN)
    """Path on the service, starting with `/`, e.g. `/reset`."""


class HealthCheck(Spec):
    """How the runner knows the service is up: `GET path` answers 2xx."""

    path: str = Field(default="/health", pattern=HTTP_PATH_PATTERN)
    """Path polled with GET until it answers 2xx."""
    timeout_s: float = Field(default=20.0, gt=0, le=600)
    """Seconds the service has to become healthy after its start; past it the start fails with
    the tail of the service's log."""


class StateEndpoints(Spec):
    """Optional: the service can hand out and take back its whole state as JSON, so a killed run
    resumes from the last finished session instead of re-running the episode from its start."""

    get: str = Field(pattern=HTTP_PATH_PATTERN)
    """Path answering `GET` with the state as JSON."""
    put: str = Field(pattern=HTTP_PATH_PATTERN)
    """Path taking `PUT` of that JSON and restoring it."""


class ProcessService(Spec):
    """A service that is a process serving HTTP on `127.0.0.1:$PORT`.

    It runs inside the bubblewrap sandbox (needs `--allow-python`): no network but its own
    loopback, read-only pack files, a fresh writable work directory, an empty environment except
    `env`, `PORT`, `PATH`, `HOME=/tmp` and `LANG`. `python`/`python3` as the command's first
    word is the runner's own interpreter (standard library only: no packages of the runner's
    virtual environment). stdout and stderr go to a log file in the run's work directory; one
    instance runs per episode environment."""

    command: list[str] = Field(min_length=1)
    """Program and arguments, e.g. `[python, services/crm.py]`; relative paths resolve against
    `cwd`."""
    cwd: str = "."
    """Working directory, relative to the declaring YAML file (the compiled plan holds it
    absolute). It is mounted read-only: write to `/work`."""
    port: int | Literal["auto"] = "auto"
    """The TCP port the service listens on inside its sandbox, given to it as `$PORT`; `auto`
    picks a free one (each sandbox has its own network, so any port is free)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables (values may use `{{ }}` pack vars)."""
    health: HealthCheck = Field(default_factory=HealthCheck)
    """Readiness check after start."""
    reset: HttpEndpoint | None = None
    """Called between sessions that do not share state and before each repeat; without it the
    service is restarted instead."""
    state: StateEndpoints | None = None
    """Snapshot/restore endpoints for exact and fast resume; without them resume re-runs the
    episode from its start."""
    stop_grace_s: float = Field(default=5.0, ge=0, le=60)
    """Seconds between SIGTERM and SIGKILL when the service is stopped."""
    memory_mb: int = Field(default=512, ge=64, le=8192)
    """Address-space limit of each process of the service."""
    cpu_s: int = Field(default=3600, ge=1)
    """CPU seconds the service may use over its whole life."""


class HttpImpl(Spec):
    """A tool that is one HTTP request to a process service.

    `{name}` in `path`, `query` and `body` is replaced by the tool argument `name`: in `path`
    URL-escaped (a missing argument is a tool error); a string that is exactly `{name}` takes the
    argument's JSON value (number, list…) and is left out when the argument is absent; in a
    longer string the argument is interpolated as text. Without `query` and `body`, the
    arguments not used by `path` go to the query string for GET and DELETE and to a JSON body
    otherwise. A 2xx answer is the tool's result (request and response, the body JSON or text
    cut at `max_response_chars`); any other status, a timeout or an unreachable service is a
    tool error with the status and an excerpt of the body."""

    kind: Literal["http"]
    service: str
    """Name of a service with a `process`."""
    method: HttpMethod = "GET"
    """HTTP method."""
    path: str = Field(pattern=HTTP_PATH_PATTERN)
    """Path template, e.g. `/orders/{order_id}`."""
    query: dict[str, Any] | None = None
    """Query parameters (templates), e.g. `{q: "{query}", limit: "{max_results}"}`."""
    body: Any = None
    """JSON body (template), e.g. `{note: "{text}", tags: "{tags}"}`."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers (fixed text)."""
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Time limit of the request."""
    max_response_chars: int = Field(default=20_000, ge=100, le=1_000_000)
    """Longest response body kept (the rest is cut and `truncated` set)."""
