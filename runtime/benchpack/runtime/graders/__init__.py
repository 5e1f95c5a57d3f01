"""Deterministic graders: the rule language, opt-in Python graders, verified-outcome scores."""

from .python import PythonResult, run_python_grader
from .rule import RuleResult, evaluate
from .trace import Trace
from .verify import pass_at_k, pass_hat_k, soft_score

__all__ = ["PythonResult", "RuleResult", "Trace", "evaluate", "pass_at_k", "pass_hat_k",
           "run_python_grader", "soft_score"]
