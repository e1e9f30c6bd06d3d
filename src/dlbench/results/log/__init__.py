"""The experiment log: its line format (:mod:`.file`), one log's bytes made into a record
(:mod:`.scan`), log files made into records (:mod:`.parser`), values kept as their JSON
text (:mod:`.rawjson`), and the progress and failure keys the worker and runner share
(:mod:`.progress`).
"""

from __future__ import annotations
