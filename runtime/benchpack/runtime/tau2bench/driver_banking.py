"""The driver's banking_knowledge check of ATM deposit scans: loaded by `driver.py` from its own
folder and run by τ²'s Python; it imports nothing of benchpack.

τ²'s `get_atm_deposit_images_8473` answers a scan for a few transaction ids written into its
code and "images not available" for every other Rho-Bank ATM deposit; benchpack's toolset
always answers the latter. Whether that can ever show is a question about the data, so an
import asks τ²'s own tool about every ATM deposit a task can start with: the database's, and
those of each task whose starting state names the type (`atm_deposit` in its data or its
actions; no other task can hold one). A run adds transactions only under generated `txn_…`
ids (τ²'s tools), never one τ² scans.
"""

from __future__ import annotations

from typing import Any

BANKING = "banking_knowledge"
TOOL = "get_atm_deposit_images_8473"
NOT_AVAILABLE = "IMAGES NOT AVAILABLE"
"""The status line of τ²'s answer without a scan (benchpack's toolset answers the same text)."""


def deposit_scans(driver: Any) -> dict[str, Any]:
    """`{checked, tasks, with_scans: [{task, transaction}]}`: how many ATM deposits τ²'s tool
    was asked about, in how many starting states (the database's counts as one), and those it
    answered with a scan."""
    checked, states, with_scans = 0, 0, []
    tasks = [(None, None), *driver.domain_tasks(BANKING).items()]
    for task_id, task in tasks:
        state = task.initial_state if task is not None else None
        if task is not None and (state is None or "atm_deposit" not in state.model_dump_json()):
            continue  # starts from the database, checked once as `None`
        env = driver.new_env(BANKING, task)
        if state is not None:
            env.set_state(initialization_data=state.initialization_data,
                          initialization_actions=state.initialization_actions,
                          message_history=state.message_history or [])
        states += 1
        history = env.tools.db.bank_account_transaction_history.data
        for txn_id, txn in history.items():
            if txn.get("type") != "atm_deposit":
                continue
            checked += 1
            answer = str(getattr(env.tools, TOOL)(txn_id))
            if NOT_AVAILABLE not in answer and not answer.startswith("Error"):
                with_scans.append({"task": task_id, "transaction": txn_id})
    return {"checked": checked, "states": states, "with_scans": with_scans}
