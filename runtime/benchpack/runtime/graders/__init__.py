"""Deterministic graders: the rule language, opt-in Python graders, verified-outcome scores."""

from .python import PythonResult, run_python_grader
from .rule import RuleResult, evaluate
from .trace import Trace
from .verify import (
    CapHit,
    PassRates,
    Verdict,
    fired_caps,
    pass_at_k,
    pass_hat_k,
    pass_rates,
    soft_score,
)

__all__ = ["CapHit", "PassRates", "PythonResult", "RuleResult", "Trace", "Verdict", "evaluate",
           "fired_caps", "pass_at_k", "pass_hat_k", "pass_rates", "run_python_grader",
           "soft_score"]
