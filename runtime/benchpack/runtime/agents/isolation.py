"""Per session × repeat isolation of a harness process (`cmd2:`; issue 14).

A harness keeps memory where every program does: `~/.config`, `~/.cache`, `$TMPDIR`. With the
runner's own HOME, repeat 2 could read what repeat 1 wrote and pass@k would measure a harness
that has seen the task. And a harness that inherits `OPENAI_API_KEY` calls the provider past
the recording proxy, so its tokens go unrecorded. So each opening gets:

- fresh `HOME`, `XDG_CONFIG_HOME`, `XDG_CACHE_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME`,
  `XDG_RUNTIME_DIR` and `TMPDIR` (`TEMP`, `TMP`), under one temporary directory removed on close;
- the parent's environment minus every credential-like variable (`scrub_environment`), except
  the ones named with `--pass-env`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..tmpdirs import temp_dir

CREDENTIAL_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION_ID", re.IGNORECASE)
"""Variable names that may carry a credential (`*KEY*`, `*TOKEN*`…). Broader than
`redact.SECRET_NAME` on purpose: a harness loses a harmless variable at worst, while a leaked
key lets it call a model behind the proxy's back."""

PROVIDER_PREFIXES = (
    "OPENAI_", "ANTHROPIC_", "AZURE_", "AWS_", "GOOGLE_", "GCLOUD_", "GEMINI_", "VERTEX",
    "HF_", "HUGGING", "COHERE_", "MISTRAL_", "GROQ_", "TOGETHER", "OPENROUTER_", "DEEPSEEK_",
    "XAI_", "FIREWORKS", "REPLICATE_", "PERPLEXITY", "LITELLM_", "LANGCHAIN_", "LANGSMITH_",
    "OLLAMA_", "DASHSCOPE_", "ZHIPU", "MOONSHOT_", "QWEN_", "VOYAGE_", "BEDROCK_", "SSH_AUTH",
    "GPG_AGENT", "DOCKER_", "KUBECONFIG", "NETRC", "NPM_CONFIG_", "PIP_INDEX", "UV_INDEX",
)
"""Provider and tool variables dropped whatever their name says: base URLs and organisation
ids steer a harness to a provider as surely as a key does (`OPENAI_BASE_URL` would bypass the
proxy), and agent sockets hand out credentials without holding one."""

XDG = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
       "XDG_RUNTIME_DIR")


def is_credential(name: str) -> bool:
    upper = name.upper()
    return bool(CREDENTIAL_NAME.search(upper)) or upper.startswith(PROVIDER_PREFIXES)


def scrub_environment(environ: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """`environ` without credential-like and provider variables, except those in `keep`."""
    kept = set(keep)
    return {k: v for k, v in environ.items() if k in kept or not is_credential(k)}


@dataclass
class Isolation:
    """The directories of one harness opening; `close()` removes them."""

    root: Path
    home: Path
    tmp: Path

    @classmethod
    def create(cls, prefix: str = "benchpack-harness-") -> Isolation:
        root = temp_dir(prefix)
        home, tmp = root / "home", root / "tmp"
        for d in (home, tmp, *(root / "xdg" / n.lower() for n in XDG)):
            d.mkdir(parents=True, mode=0o700)
        return cls(root, home, tmp)

    def environment(self, parent: Mapping[str, str], keep: Iterable[str] = ()
                    ) -> dict[str, str]:
        """The harness's environment: `parent` scrubbed, with this opening's directories."""
        env = scrub_environment(parent, keep)
        env["HOME"] = str(self.home)
        for name in XDG:
            env[name] = str(self.root / "xdg" / name.lower())
        for name in ("TMPDIR", "TEMP", "TMP"):
            env[name] = str(self.tmp)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.setdefault("PYTHONIOENCODING", "utf-8")
        return env

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def check_pass_env(names: Iterable[str]) -> list[str]:
    """`--pass-env` names, validated: a name with `=` is the common slip of giving a value."""
    out = []
    for name in names:
        if not name or "=" in name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UsageError(f"--pass-env {name!r}: give a variable's name, not a value "
                             "(e.g. --pass-env GITHUB_TOKEN)")
        out.append(name)
    return out


__all__ = ["CREDENTIAL_NAME", "PROVIDER_PREFIXES", "Isolation", "check_pass_env",
           "is_credential", "scrub_environment"]

