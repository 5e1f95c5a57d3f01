"""Statistics for reports: pure Python (stdlib only), deterministic, checked against published tables.

One import path, `benchpack.reports.stats`, for modules split by subject: `resampling` (means,
bootstrap and normal CIs), `kappa` (agreement, κ), `alpha` (Krippendorff's α and its CIs), `caution` (when α's CI cannot be
trusted, and Kendall τ's raised upper end), `rank` (rank correlation), `passk` (pass@k,
pass^k, trigger rates) and `uncertainty` (headline uncertainty: clustered standard errors,
exact and design-effect proportion intervals, Student-t intervals, flip rate).

Conventions shared by every function here:

- A statistic that is mathematically undefined for the input (no data, zero variance, chance
  agreement of 1) is returned as ``None``, never as NaN, so renderers show "–" instead of a
  number. Malformed input (negative counts, ``k > n``, ragged matrices) raises ``ValueError``.
- Ordinal categories are given in order, worst first (``["Fail", "Partial", "Pass"]``); matrix
  row/column ``i`` is the ``i``-th category.
- Bootstrap CIs resample *units* (clusters), never the observations inside them. Which unit
  each report resamples is listed in ``reports/README.md`` and on :func:`bootstrap_ci`.
"""


from __future__ import annotations

from ..cluster import CLUSTER, CLUSTER_NOTE, cluster_name
from .alpha import (
    AlphaLevel,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    krippendorff_alpha_coincidence,
)
from .caution import (
    ALPHA_MIN_DISAGREEING,
    ALPHA_MIN_OFF_MODE,
    TAU_MAX_SPREAD,
    TAU_MIN_AGENTS,
    TAU_WIDE_AGENTS,
    alpha_caution,
    alpha_count_interval,
    alpha_counts,
    tau_caution,
    tau_spread,
    tau_upper,
)
from .kappa import (
    Agreement,
    KappaWeights,
    agreement,
    cluster_kappa_cis,
    cohen_kappa,
    confusion_matrix,
    kappa_cis,
)
from .passk import (
    PASS_K_DEFINITION,
    PassK,
    TriggerRates,
    pass_at_k,
    pass_at_k_over_tasks,
    pass_hat_k,
    pass_hat_k_over_tasks,
    pass_k_summary,
    task_counts,
    trigger_rates,
)
from .rank import rank_stability, ranks, spearman_rho
from .resampling import (
    BootstrapCI,
    MacroMicro,
    MeanStd,
    bootstrap_ci,
    bootstrap_counts,
    macro_micro,
    mean_std,
    normal_ci,
)
from .uncertainty import (
    PROPORTION_METHOD,
    TOO_FEW_CLUSTERS,
    FlipRate,
    Uncertainty,
    beta_ppf,
    betainc,
    clopper_pearson,
    clustered_se,
    flip_rate,
    headline_interval,
    interval_note,
    t_ppf,
    wilson,
)

__all__ = [
    "ALPHA_MIN_DISAGREEING",
    "ALPHA_MIN_OFF_MODE",
    "CLUSTER",
    "CLUSTER_NOTE",
    "PASS_K_DEFINITION",
    "PROPORTION_METHOD",
    "TAU_MAX_SPREAD",
    "TAU_MIN_AGENTS",
    "TAU_WIDE_AGENTS",
    "TOO_FEW_CLUSTERS",
    "Agreement",
    "AlphaLevel",
    "BootstrapCI",
    "FlipRate",
    "KappaWeights",
    "MacroMicro",
    "MeanStd",
    "PassK",
    "TriggerRates",
    "Uncertainty",
    "agreement",
    "alpha_caution",
    "alpha_count_interval",
    "alpha_counts",
    "beta_ppf",
    "betainc",
    "bootstrap_ci",
    "bootstrap_counts",
    "clopper_pearson",
    "cluster_kappa_cis",
    "cluster_name",
    "clustered_se",
    "cohen_kappa",
    "confusion_matrix",
    "flip_rate",
    "headline_interval",
    "interval_note",
    "kappa_cis",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "krippendorff_alpha_coincidence",
    "macro_micro",
    "mean_std",
    "normal_ci",
    "pass_at_k",
    "pass_at_k_over_tasks",
    "pass_hat_k",
    "pass_hat_k_over_tasks",
    "pass_k_summary",
    "rank_stability",
    "ranks",
    "spearman_rho",
    "t_ppf",
    "task_counts",
    "tau_caution",
    "tau_spread",
    "tau_upper",
    "trigger_rates",
    "wilson",
]
