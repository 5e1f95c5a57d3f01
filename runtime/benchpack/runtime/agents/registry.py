"""Agent adapters by URI: `<scheme>:<argument>` → an `AgentAdapter`.

Every adapter is a factory `(argument, context) -> AgentAdapter` named by an import path
(`module:attribute`) and imported only when its scheme is used, so `scripted:` never pays for
litellm. Third-party adapters register the same way, in the `benchpack.agents` entry-point group
of their package (a built-in scheme of the same name wins):

```toml
[project.entry-points."benchpack.agents"]
myagent = "my_package.bench:make_adapter"     # bench run build/ --agent myagent:<argument>
```

`UnknownAgentScheme` (nothing is registered under the scheme) and `AgentLoadError` (something
is, but importing it failed — usually a missing dependency) are told apart; both are
`ValueError`s, so the CLI reports them as user errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..types import AgentAdapter

if TYPE_CHECKING:
    from ..llm import LLMClient

ENTRY_POINT_GROUP = "benchpack.agents"


@dataclass(frozen=True)
class AgentContext:
    """What an adapter factory gets besides its argument."""

    llm: Callable[[], LLMClient]
    """The run's shared LLM client, built on first call (adapters that call models use it)."""
    options: Any = None
    """The run's `RunOptions`, read-only by convention (None outside `bench run`)."""


AgentFactory = Callable[[str, AgentContext], AgentAdapter]


class AgentAdapterError(UsageError):
    """An agent URI that cannot be turned into an adapter."""


class UnknownAgentScheme(AgentAdapterError):
    """No adapter is registered under the scheme."""


class AgentLoadError(AgentAdapterError):
    """An adapter is registered under the scheme, but importing it failed."""


@dataclass(frozen=True)
class AdapterRef:
    """A registered adapter: where its factory lives and how its URI looks."""

    target: str
    """`module:attribute` of the factory."""
    usage: str
    """The URI shape for messages, e.g. `litellm:<model>`."""


BUILTIN_ADAPTERS: Mapping[str, AdapterRef] = {
    "litellm": AdapterRef("benchpack.runtime.agents.litellm_agent:make_adapter",
                          "litellm:<model>"),
    "cmd": AdapterRef("benchpack.runtime.agents.cmd_agent:make_adapter", "cmd:<command>"),
    "cmd2": AdapterRef("benchpack.runtime.agents.cmd2_agent:make_adapter",
                       "cmd2:[--model M] [--pass-env NAME] [--no-mcp] <command>"),
    "acp": AdapterRef("benchpack.runtime.agents.acp_agent:make_adapter",
                      "acp:[--model M] [--pass-env NAME] [--allow-builtin-tools] <command>"),
    "a2a": AdapterRef("benchpack.runtime.agents.a2a_agent:make_adapter",
                      "a2a:[--model M] [--no-mcp] <agent URL>"),
    "python": AdapterRef("benchpack.runtime.agents.python_agent:make_adapter",
                         "python:<module>:<callable>"),
    "scripted": AdapterRef("benchpack.runtime.agents.scripted:make_scripted",
                           "scripted:<file>"),
    "replay": AdapterRef("benchpack.runtime.agents.scripted:make_replay", "replay:<file>"),
    "adversary": AdapterRef("benchpack.runtime.agents.adversary:make_adapter",
                            "adversary:nothing|done|echo|every-tool"),
}


class AgentRegistry:
    """Scheme → adapter factory: the built-ins, anything `register`ed, then the entry points
    of `group` (discovered on the first unknown scheme, imported only when used)."""

    def __init__(self, adapters: Mapping[str, AdapterRef] = BUILTIN_ADAPTERS,
                 group: str | None = ENTRY_POINT_GROUP) -> None:
        self._refs: dict[str, AdapterRef] = dict(adapters)
        self._factories: dict[str, AgentFactory] = {}
        self._group = group
        self._entry_points: dict[str, EntryPoint] | None = None

    def register(self, scheme: str, factory: AgentFactory | str, usage: str | None = None
                 ) -> None:
        """Add (or replace) an adapter: a factory, or the `module:attribute` of one."""
        self._factories.pop(scheme, None)
        if isinstance(factory, str):
            self._refs[scheme] = AdapterRef(factory, usage or f"{scheme}:<argument>")
        else:
            self._refs[scheme] = AdapterRef(_qualname(factory), usage or f"{scheme}:<argument>")
            self._factories[scheme] = factory

    def schemes(self) -> list[str]:
        """Every known scheme, entry points included (without importing them)."""
        return sorted({*self._refs, *self._plugins()})

    def usage(self) -> str:
        """The known URI shapes, for error messages."""
        shapes = [ref.usage for ref in self._refs.values()]
        shapes += [f"{name}:<argument>" for name in sorted(self._plugins())
                   if name not in self._refs]
        return ", ".join(shapes)

    def factory(self, scheme: str) -> AgentFactory:
        """The factory of `scheme`, importing it on first use."""
        found = self._factories.get(scheme)
        if found is not None:
            return found
        ref = self._refs.get(scheme)
        if ref is not None:
            loaded = _load(scheme, lambda: _import(ref.target), ref.target)
        else:
            ep = self._plugins().get(scheme)
            if ep is None:
                raise UnknownAgentScheme(f"unknown agent adapter `{scheme}:`; known: "
                                         f"{self.usage()}")
            loaded = _load(scheme, ep.load, f"{ep.value} (entry point in {self._group})")
        if not callable(loaded):
            raise AgentLoadError(f"agent adapter `{scheme}`: {ref.target if ref else scheme} "
                                 "is not callable; it must be a factory (argument, context) "
                                 "-> adapter")
        factory: AgentFactory = loaded
        self._factories[scheme] = factory
        return factory

    def create(self, uri: str, context: AgentContext) -> AgentAdapter:
        """The adapter for `uri` (`<scheme>:<argument>`)."""
        scheme, sep, argument = uri.partition(":")
        if not sep or not scheme or not argument:
            raise AgentAdapterError(f"agent `{uri}`: use {self.usage()}")
        return self.factory(scheme)(argument, context)

    def _plugins(self) -> dict[str, EntryPoint]:
        if self._entry_points is None:
            self._entry_points = {} if self._group is None else {
                ep.name: ep for ep in entry_points(group=self._group)}
        return self._entry_points


def default_agent_registry() -> AgentRegistry:
    """A fresh registry of the built-in adapters and the installed plug-ins."""
    return AgentRegistry()


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def _load(scheme: str, load: Callable[[], Any], where: str) -> Any:
    try:
        return load()
    except ImportError as exc:
        missing = f" (the module `{exc.name}` is missing: install it)" if exc.name else ""
        raise AgentLoadError(f"agent adapter `{scheme}` failed to load from {where}: "
                             f"{exc}{missing}") from exc
    except Exception as exc:  # a broken plug-in: say which, never hide it behind "unknown"
        raise AgentLoadError(f"agent adapter `{scheme}` failed to load from {where}: "
                             f"{type(exc).__name__}: {exc}") from exc


def _qualname(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


__all__ = ["BUILTIN_ADAPTERS", "ENTRY_POINT_GROUP", "AdapterRef", "AgentAdapterError",
           "AgentContext", "AgentFactory", "AgentLoadError", "AgentRegistry",
           "UnknownAgentScheme", "default_agent_registry"]
