"""The vision room: vision-language policies: verl's image parquet schema and bad-cell rejection (``data``),
processor outputs carried through rollout and update (``inputs``), tiny Qwen2-VL / Qwen2.5-VL models built in
code (``model``) and the built-in bars task (``task``).

The folder map: docs/architecture.md.
"""
