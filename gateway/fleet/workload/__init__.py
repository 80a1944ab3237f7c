"""The workload a replay offers: the shipped traces (``data/``: Azure LLM inference 2023, code and
conversation; Mooncake's conversation trace) and any trace file read as requests, their arrival
schedules (``traces.py``) and a prompt's prefix blocks (``prefix.py``). Imports nothing of the
project."""
