"""Frameworks that live in one folder each: a light declaration the parent imports
(``declaration.py``) and everything the worker runs beside it."""
