"""τ²-bench against its own code: the driver (`driver.py`, run by τ²'s Python from the user's
checkout, never imported here), its client (`client.py`), and the tool-call parity harness
(`bench parity tau2`: `callgen.py` makes the calls, `compare.py` compares, `parity.py` runs
them through benchpack's real tool path and through τ²)."""
