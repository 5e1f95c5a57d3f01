"""The rule language interpreter, `benchpack.specs.rules`: one home for the meaning of a rule,
which the compiler's lints use too. Re-exported here, where the graders have always found
it."""

from benchpack.specs.rules import RuleResult, evaluate

__all__ = ["RuleResult", "evaluate"]
