"""Deterministic graders: the rule language, opt-in Python graders, verified-outcome scores."""

from .python import PythonResult, run_python_grader
from .rule import RuleResult, evaluate
from .trace import Trace
from .verify import (
    CapHit,
    Verdict,
    fired_caps,
    soft_score,
)

__all__ = ["CapHit", "PythonResult", "RuleResult", "Trace", "Verdict", "evaluate",
           "fired_caps", "run_python_grader", "soft_score"]
